"""A speed gate for CI: a pick re-measured now against its recorded figures, judged (pure).

Rules:
- the *recorded* figures are the pick's raw per-call latencies at its selected batch size
  as a run record keeps them (:func:`recorded_figures`: the selection's samples, else the
  pick's profile at that batch size); the *current* figures are the same pick timed again
  at that batch size on this machine;
- the pick's speed now is the ratio ``recorded / now`` of their statistic (the current
  run's *speedup* over the recorded one), with the interval the strategies use for
  samples timed at different moments (:func:`~aitune_fp.core.stats.bootstrap.ratio_interval`
  under :data:`CHECK_RULE`: the default confidence, resamples and seed, and the median the
  verification judges by, robust to a loaded CI runner's stalls where a trimmed mean is
  not), judged against the margin by the project's one verdict rule
  (:func:`~aitune_fp.core.stats.evidence.verdict`);
- two picks timed now in interleaved rounds (a save checked against a baseline save) are
  *paired*: ``recorded`` is the baseline's round samples and the interval is the paired
  one (the median of the per-round ratios: drift common to a round cancels);
- the check *fails* when the pick is slower beyond the margin (the verdict is a ``loss``:
  the whole interval below ``1 / (1 + margin)``) or is no longer correct (``wrong``: why
  its outputs no longer pass the accuracy check); an ``undecided`` interval passes (a gate
  fails on evidence, not on noise) and says so;
- :func:`verdict_line` is the one-line verdict a CI log shows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from aitune_fp.core.record.run_record import RunRecord
from aitune_fp.core.stats.bootstrap import ratio_interval
from aitune_fp.core.stats.confidence import ConfidenceRule
from aitune_fp.core.stats.evidence import Verdict, verdict

MARGIN: Final = 0.10
"""The default margin: a pick more than 10 % slower than recorded (with confidence) fails."""
CHECK_RULE: Final = ConfidenceRule(paired_statistic="median")
"""The interval's rule: :class:`ConfidenceRule`'s defaults, judged by the median."""


@dataclass(frozen=True, slots=True)
class Figures:
    """A pick's per-call latencies (ms) at one batch size."""

    pick: str
    batch_size: int
    samples_ms: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class CheckResult:
    """A check's outcome: the pick, the speedup now over recorded with its interval, the
    verdict against the margin, why it is wrong when it is, and whether it passed."""

    pick: str
    batch_size: int
    point: float
    low: float
    high: float
    speed: Verdict
    margin: float
    recorded_ms: tuple[float, ...]
    now_ms: tuple[float, ...]
    wrong: str | None = None

    @property
    def passed(self) -> bool:
        """Neither slower beyond the margin nor wrong."""
        return self.speed != "loss" and self.wrong is None


def recorded_figures(record: RunRecord) -> Figures:
    """The pick's recorded figures (see the module's rules); ``ValueError`` when the record
    has no pick or no samples for it.

    >>> from aitune_fp.core.records import BackendProfilingResult, Selection
    >>> result = BackendProfilingResult(1.0, 4, 1.0, 4000.0, samples_ms=(1.0, 1.1))
    >>> r = RunRecord("m", "cpu", {}, None, (), Selection("ort", result, False),
    ...               None, {}, {}, None)
    >>> recorded_figures(r)
    Figures(pick='ort', batch_size=4, samples_ms=(1.0, 1.1))
    """
    chosen = record.selection
    if chosen is None:
        raise ValueError("the run has no pick to check (it selected nothing)")
    size = chosen.result.selected_batch_size
    samples = tuple(chosen.result.samples_ms)
    if not samples:
        rows = [o.profile for o in record.outcomes if o.backend == chosen.backend and o.profile]
        samples = tuple(rows[0].latencies_ms.get(size, ())) if rows else ()
    if not samples:
        raise ValueError(f"the run keeps no samples of its pick {chosen.backend} at batch {size}")
    return Figures(chosen.backend, size, samples)


def judge_check(
    recorded: Figures,
    now_ms: Sequence[float],
    *,
    margin: float = MARGIN,
    rule: ConfidenceRule = CHECK_RULE,
    wrong: str | None = None,
    paired: bool = False,
) -> CheckResult:
    """``recorded`` against ``now_ms`` (see the module's rules).

    >>> before = Figures("ort", 1, (1.0, 1.02, 0.98, 1.01, 0.99) * 6)
    >>> judge_check(before, [x * 1.2 for x in before.samples_ms]).passed
    False
    >>> judge_check(before, before.samples_ms).speed, judge_check(before, before.samples_ms).passed
    ('equivalent', True)
    """
    if margin < 0.0:
        raise ValueError(f"margin must be >= 0, got {margin!r}")
    now = tuple(now_ms)
    found = ratio_interval(
        recorded.samples_ms,
        now,
        statistic=rule.round_statistic,
        confidence=rule.confidence,
        resamples=rule.resamples,
        key=rule.seed,
        paired=paired,
    )
    return CheckResult(
        recorded.pick,
        recorded.batch_size,
        found.point,
        found.low,
        found.high,
        verdict(found.low, found.high, margin),
        margin,
        recorded.samples_ms,
        now,
        wrong,
    )


_SAID: Final = {
    "loss": "slower than recorded beyond the margin",
    "win": "faster than recorded beyond the margin",
    "equivalent": "as fast as recorded, within the margin",
    "undecided": "not shown slower than recorded beyond the margin (interval straddles it)",
}


def verdict_line(result: CheckResult) -> str:
    """The one-line verdict.

    >>> before = Figures("ort", 8, (1.0,) * 5)
    >>> for part in verdict_line(judge_check(before, (1.25,) * 5)).split(": "):
    ...     print(part)
    check FAILED
    ort at batch 8 is slower than recorded beyond the margin
    0.800× [0.800, 0.800] now over recorded (margin 10%)
    """
    head = "check passed" if result.passed else "check FAILED"
    figures = f"{result.point:.3f}× [{result.low:.3f}, {result.high:.3f}] now over recorded"
    said = f"{_SAID[result.speed]}: {figures} (margin {result.margin:.0%})"
    if result.wrong is not None:
        said = f"no longer correct ({result.wrong}); {said}"
    return f"{head}: {result.pick} at batch {result.batch_size} is {said}"
