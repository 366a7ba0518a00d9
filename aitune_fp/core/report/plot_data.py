"""What the plot draws for the decision, as data (pure): the same figures as the table.

Rules:
- the *star* is the selection at the batch size the decision ended on, at the decision
  account's figure (:mod:`.account`) as a throughput (``batch × 1000 / ms`` for a latency
  metric), labelled with that figure, where it was measured and the account's speedup:
  the table's selected row and the ``Selected``/``Speedup`` lines, never a sweep figure
  the decision no longer rests on;
- the *marks* are every table row's figure measured after the sweep (final rounds or
  verification), as throughputs, so the panel of sweep curves also shows the level each
  backend had where the decision was taken (the two may disagree: :mod:`.gap`);
- a row's *spread* is the samples its figures come from: the sweep's at its batch size,
  its final-rounds samples, or its paired verification samples (its smallest swept batch
  size's sweep samples when the row has no figure);
- a metric that is neither a throughput nor a latency has no star nor marks.
"""

from __future__ import annotations

from dataclasses import dataclass

from aitune_fp.core.record.run_record import BackendOutcome, RunRecord
from aitune_fp.core.report.account import decision_account
from aitune_fp.core.report.formats import format_metric, format_speedup
from aitune_fp.core.report.sources import ROUNDS, SWEEP, VERIFICATION, metric_kind
from aitune_fp.core.report.sources import verification_samples as paired_samples
from aitune_fp.core.report.tables import BackendRow, backend_rows


@dataclass(frozen=True, slots=True)
class Mark:
    """A point of the throughput panel: a backend at a batch size, its samples/s, a label."""

    backend: str
    batch_size: int
    rate: float
    label: str


def _rate(record: RunRecord, batch_size: int, value: float) -> float | None:
    kind = metric_kind(record)
    if kind == "throughput":
        return value
    if kind == "latency" and value > 0:
        return batch_size * 1000.0 / value
    return None


def star(record: RunRecord) -> Mark | None:
    """The selection's star (see the module's rules), ``None`` without an account.

    >>> star(RunRecord("m", "cpu", {}, None, (), None, None, {}, {}, None)) is None
    True
    """
    account = decision_account(record)
    if account is None:
        return None
    chosen = account.selected
    rate = _rate(record, chosen.batch_size, chosen.value)
    if rate is None:
        return None
    label = f"selected: {chosen.at}, {format_metric(record, chosen.value)} ({chosen.source})"
    if account.speedup is not None:
        label += f", {format_speedup(account.speedup)}"
    return Mark(chosen.backend, chosen.batch_size, rate, label)


def marks(record: RunRecord) -> tuple[Mark, ...]:
    """Every row's figure measured after the sweep, as a throughput (see the rules)."""
    found = []
    for row in backend_rows(record):
        if row.source in ("", SWEEP) or row.metric is None or row.batch_size is None:
            continue
        rate = _rate(record, row.batch_size, row.metric)
        if rate is not None:
            found.append(Mark(row.backend, row.batch_size, rate, f"{row.backend} ({row.source})"))
    return tuple(found)


def spread(
    record: RunRecord, row: BackendRow, outcome: BackendOutcome
) -> tuple[int, tuple[float, ...], str]:
    """The batch size, samples (ms) and source of ``row``'s figures (see the rules)."""
    profile = outcome.profile
    sizes = () if profile is None else profile.batch_sizes
    bs = row.batch_size if row.batch_size is not None else (sizes[0] if sizes else 0)
    if row.source == ROUNDS and profile is not None and profile.rounds_ms.get(bs):
        return bs, tuple(profile.rounds_ms[bs]), ROUNDS
    v = record.verification
    if row.source == VERIFICATION and v is not None:
        paired = tuple(paired_samples(v, row.backend, bs))
        if paired:
            return bs, paired, VERIFICATION
    if profile is None or not sizes:
        return bs, (), SWEEP
    bs = bs if bs in profile.latencies_ms else sizes[0]
    return bs, tuple(profile.samples(bs)), SWEEP
