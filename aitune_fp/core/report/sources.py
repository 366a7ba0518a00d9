"""Where a backend at a batch size was measured in a stored run, and its figure there (pure).

A run measures a backend up to three times: its batch-size *sweep*, the interleaved
*final rounds* (the leaders at the batch sizes their sweeps selected) and the paired
*verification* (the pick against its runner-ups and its neighbouring batch sizes). The
three differ in level on a busy machine (interleaving with other runtimes costs), so a
figure is only ever compared with a figure of the same measurement.

Rules:
- a *participant* is a backend at a batch size; :func:`figure` gives its figure in one
  source, ``None`` when it did not take part there;
- sweep: the strategy's own metric as the selection recorded it (the selection's result,
  the baseline's, the ranking's), at that batch size only;
- final rounds: the statistic of the backend's round samples at that batch size (the
  strategy's ``paired_statistic``, else its ``statistic``, else the median);
- verification: the median of the participant's paired samples (the statistic the
  verification judges by), keyed ``backend`` at the batch size it took part at, or
  ``backend@batch`` for the winner at a neighbouring batch size; a verification with too
  few rounds to judge (:func:`judged`) is no source: the decision did not rest on it;
- a round figure is the metric computed from that statistic: ``batch * 1000 / ms`` for a
  throughput metric, ``ms`` for a latency metric; a metric of another kind has only sweep
  figures (nothing else can be turned into it);
- :data:`SOURCES` is ordered oldest to newest.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from aitune_fp.core.record.run_record import RunRecord
from aitune_fp.core.records import BackendProfilingResult
from aitune_fp.core.stats.statistics import statistic_value
from aitune_fp.core.verification.judge import MIN_ROUNDS, Verification

SWEEP: Final = "sweep"
ROUNDS: Final = "final rounds"
VERIFICATION: Final = "verification"
SOURCES: Final = (SWEEP, ROUNDS, VERIFICATION)
TOO_FEW: Final = "too few rounds"


@dataclass(frozen=True, slots=True)
class Figure:
    """One shown figure: a backend at a batch size, its metric value, where it was measured
    (one of :data:`SOURCES`) and from how many samples (0: the recorded metric only).

    >>> Figure("onnxruntime", 16, 950.0, "verification", 10).where
    'onnxruntime@16, verification'
    """

    backend: str
    batch_size: int
    value: float
    source: str
    samples: int = 0

    @property
    def at(self) -> str:
        """``backend@batch``."""
        return f"{self.backend}@{self.batch_size}"

    @property
    def where(self) -> str:
        """``backend@batch, source``."""
        return f"{self.at}, {self.source}"


def metric_kind(record: RunRecord) -> str | None:
    """``throughput``, ``latency`` or ``None`` (a metric round samples cannot give); a
    generation tune's tokens/s is a throughput (its verification samples ms per new token,
    :func:`~aitune_fp.core.generation.verify.round_sample`), its TTFT and ITL latencies.

    >>> r = RunRecord("m", "cpu", {"metric_label": "latency", "metric_unit": "ms"}, None,
    ...               (), None, None, {}, {}, None)
    >>> metric_kind(r)
    'latency'
    """
    stored = record.strategy.get("metric_kind")
    if stored in ("throughput", "latency"):
        return str(stored)
    shape = (record.strategy.get("metric_label"), record.strategy.get("metric_unit"))
    known = {("throughput", "samples/s"): "throughput", ("latency", "ms"): "latency",
             ("tokens/s", "tokens/s"): "throughput", ("ttft", "ms"): "latency",
             ("itl", "ms"): "latency"}  # fmt: skip
    return known.get((str(shape[0]), str(shape[1])))


def round_statistic(record: RunRecord) -> str:
    """The statistic of the final rounds' figures (see the module's rules)."""
    params = record.strategy.get("parameters")
    for key in ("paired_statistic", "statistic"):
        value = params.get(key) if isinstance(params, Mapping) else None
        if isinstance(value, str):
            try:
                statistic_value(value, (1.0,))
            except ValueError:
                continue
            return value
    return "median"


def _metric(kind: str, batch_size: int, ms: float) -> float:
    return batch_size * 1000.0 / ms if kind == "throughput" else ms


def _sweep_results(record: RunRecord) -> tuple[tuple[str, BackendProfilingResult], ...]:
    sel = record.selection
    if sel is None:
        return ()
    base = () if sel.baseline is None else ((sel.baseline.backend, sel.baseline.result),)
    return ((sel.backend, sel.result), *base, *((s.backend, s.result) for s in sel.ranking))


def sweep_figure(record: RunRecord, backend: str, batch_size: int) -> Figure | None:
    """The strategy's recorded metric for ``backend`` at ``batch_size``, if any."""
    for name, result in _sweep_results(record):
        if name == backend and result.selected_batch_size == batch_size:
            return Figure(backend, batch_size, result.metric, SWEEP, len(result.samples_ms))
    return None


def _round_samples(record: RunRecord, backend: str, batch_size: int) -> Sequence[float]:
    for outcome in record.outcomes:
        if outcome.backend == backend and outcome.profile is not None:
            return tuple(outcome.profile.rounds_ms.get(batch_size, ()))
    return ()


def verification_samples(v: Verification, backend: str, batch_size: int) -> Sequence[float]:
    """The participant's paired verification samples (empty when it did not take part)."""
    label = f"{backend}@{batch_size}"
    if label in v.samples_ms:
        return v.samples_ms[label]
    if backend == v.winner:
        took_part = batch_size == v.winner_batch_size
    else:
        took_part = any(
            c.challenger == backend and c.batch_size == batch_size for c in v.comparisons
        )
    return v.samples_ms.get(backend, ()) if took_part else ()


def _paired_samples(
    record: RunRecord, backend: str, batch_size: int, source: str
) -> tuple[Sequence[float], str] | None:
    """The samples of ``backend`` in the final rounds or the verification, and the
    statistic their figure takes (``None``: no such source in the run)."""
    if source == ROUNDS:
        return _round_samples(record, backend, batch_size), round_statistic(record)
    if source == VERIFICATION and record.verification is not None:
        if not judged(record.verification):
            return None
        return verification_samples(record.verification, backend, batch_size), "median"
    return None


def judged(v: Verification) -> bool:
    """Whether the verification had the paired rounds to judge (its outcome is not ``too
    few rounds``; an older record without an outcome: at least ``MIN_ROUNDS`` rounds)."""
    if v.outcome:
        return v.outcome != TOO_FEW
    return v.rounds >= MIN_ROUNDS


def figure(record: RunRecord, backend: str, batch_size: int, source: str) -> Figure | None:
    """The figure of ``backend`` at ``batch_size`` in ``source`` (``None``: not there).

    >>> from aitune_fp.core.record.run_record import BackendOutcome
    >>> from aitune_fp.core.records import Profile
    >>> p = Profile("ort", {4: [2.0, 2.0]}, rounds_ms={4: [4.0, 3.0, 5.0]})
    >>> r = RunRecord("m", "cpu", {"metric_label": "throughput", "metric_unit": "samples/s"},
    ...               None, (BackendOutcome("ort", "ort", "k", {}, profile=p),), None, None,
    ...               {}, {}, None)
    >>> figure(r, "ort", 4, "final rounds").value, figure(r, "ort", 8, "final rounds")
    (1000.0, None)
    """
    if source == SWEEP:
        return sweep_figure(record, backend, batch_size)
    kind = metric_kind(record)
    found = _paired_samples(record, backend, batch_size, source)
    if kind is None or found is None or not found[0]:
        return None
    samples, statistic = found
    value = _metric(kind, batch_size, statistic_value(statistic, samples))
    return Figure(backend, batch_size, value, source, len(samples))
