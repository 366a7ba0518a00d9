"""The plan of the interleaved final rounds: who joins, how many rounds, how long.

Rules: after every candidate's sweep has fixed its batch size, the baseline and up to
``contenders`` leading candidates are timed again in rounds (A B C, then B C A, …: the
order rotates every round), one burst each per round (:mod:`aitune_fp.core.rounds.burst`:
a rest, settling calls, then timed calls whose median is the round's sample; ``burst`` defaults to
:data:`~aitune_fp.core.rounds.burst.STEADY`, ``Burst()`` is one call) after
``warmup_calls`` untimed calls each. Rounds go on until the decision is clear (at least
``min_rounds``), or ``max_rounds`` rounds or ``max_seconds`` of wall time are spent. The
decision is judged after ``min_rounds`` rounds and then every ``judge_every`` rounds
(judging costs a few bootstraps). Invariants are checked at construction.

Rounds are only run where the sweeps leave the decision open. Two participants are
*settled by the sweeps* when the interval of one's speedup over the other, from their
sweep samples alone, lies entirely beyond ``settled_speedup`` (default 1.25×, either way):
a gap that no plausible drift between two sweeps timed a few seconds apart closes. The
baseline joins the rounds only while some contender's comparison with it is unsettled,
and with a single contender settled against the baseline no rounds are run at all.
``settled_speedup=None`` always runs them.

The rounds must pay for themselves: besides ``max_seconds``, a driver that knows how long
the sweeps took gives the rounds at most ``sweep_share`` times that (default 2×: the
shortened sweeps time about half the reference's calls, so a tune that needs no rounds
costs about half the reference's, and one that needs many is bounded); see
:meth:`RoundsPlan.within`. The time budgets count the rounds' measuring (priming and round
calls), not the judging.

>>> RoundsPlan(min_rounds=0)
Traceback (most recent call last):
...
ValueError: need 2 <= min_rounds <= max_rounds, got min_rounds=0, max_rounds=80
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from aitune_fp.core.rounds.burst import STEADY, Burst


@dataclass(frozen=True, slots=True)
class RoundsPlan:
    """Budget and shape of the interleaved final rounds."""

    contenders: int = 3
    min_rounds: int = 6
    max_rounds: int = 80
    max_seconds: float = 30.0
    warmup_calls: int = 0
    judge_every: int = 2
    settled_speedup: float | None = 1.25
    sweep_share: float | None = 2.0
    burst: Burst = STEADY

    def __post_init__(self) -> None:
        if self.contenders < 1:
            raise ValueError(f"contenders must be >= 1, got {self.contenders}")
        if not 2 <= self.min_rounds <= self.max_rounds:
            raise ValueError(
                "need 2 <= min_rounds <= max_rounds, got "
                f"min_rounds={self.min_rounds}, max_rounds={self.max_rounds}"
            )
        if not (math.isfinite(self.max_seconds) and self.max_seconds > 0):
            raise ValueError(f"max_seconds must be a finite number > 0, got {self.max_seconds!r}")
        if self.warmup_calls < 0:
            raise ValueError(f"warmup_calls must be >= 0, got {self.warmup_calls}")
        if self.judge_every < 1:
            raise ValueError(f"judge_every must be >= 1, got {self.judge_every}")
        share = self.sweep_share
        if share is not None and not (math.isfinite(share) and share > 0.0):
            raise ValueError(f"sweep_share must be None or a finite number > 0, got {share!r}")
        settled = self.settled_speedup
        if settled is not None and not (math.isfinite(settled) and settled > 1.0):
            raise ValueError(
                f"settled_speedup must be None or a finite number > 1, got {settled!r}"
            )

    def within(self, sweep_seconds: float | None) -> RoundsPlan:
        """This plan with ``max_seconds`` cut to ``sweep_share`` times the sweeps' duration.

        >>> RoundsPlan().within(0.25).max_seconds, RoundsPlan().within(None).max_seconds
        (0.5, 30.0)
        >>> RoundsPlan(sweep_share=None).within(0.25).max_seconds
        30.0
        """
        if self.sweep_share is None or sweep_seconds is None or sweep_seconds <= 0.0:
            return self
        budget = min(self.max_seconds, self.sweep_share * sweep_seconds)
        return replace(self, max_seconds=budget) if budget > 0.0 else self

    def judges(self, rounds_done: int, elapsed_s: float) -> bool:
        """Whether the decision is judged after ``rounds_done`` rounds.

        >>> [r for r in range(12) if RoundsPlan(min_rounds=6, judge_every=2).judges(r, 0.0)]
        [6, 8, 10]
        """
        if rounds_done < self.min_rounds:
            return False
        if rounds_done >= self.max_rounds or elapsed_s >= self.max_seconds:
            return True
        return (rounds_done - self.min_rounds) % self.judge_every == 0


def rotation(names: tuple[str, ...], round_index: int) -> tuple[str, ...]:
    """The timing order of round ``round_index``: ``names`` rotated left by the index.

    >>> rotation(("a", "b", "c"), 0), rotation(("a", "b", "c"), 1), rotation(("a", "b"), 3)
    (('a', 'b', 'c'), ('b', 'c', 'a'), ('b', 'a'))
    """
    if not names:
        return ()
    k = round_index % len(names)
    return names[k:] + names[:k]
