"""When the interleaved-rounds loop asks its judge: a pure schedule over the loop's clock
account, so the loop (:func:`aitune_fp.effects.measure.interleave.interleave`) only times
calls and does what :func:`next_move` says.

Rules:
- after a round, the judge is asked (:class:`Judge`) when a participant failed in it, when
  the budget is spent (``max_rounds`` rounds, or ``max_seconds`` of measuring: warm-up and
  round calls, never judging), or when the rounds since the last verdict took at least as
  long as that verdict did; otherwise the loop goes on without a verdict (:class:`Skip`):
  judging must never cost more than the measuring it judges;
- a verdict's own cost is what the next :class:`Skip` compares with, counted only for the
  verdicts the plan's cadence asks for (:meth:`RoundsPlan.judges
  <aitune_fp.core.rounds.rounds_plan.RoundsPlan.judges>`); its seconds never count as
  measuring;
- before a round, a round the caller cannot afford stops the loop (:class:`Stop`) with
  the reason saying after how many rounds.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from aitune_fp.core.rounds.rounds_plan import RoundsPlan


@dataclass(frozen=True, slots=True)
class Pace:
    """The loop's clock account: rounds done, seconds spent measuring, seconds of rounds
    since the last verdict and what that verdict cost."""

    done: int = 0
    measuring: float = 0.0
    since_judged: float = 0.0
    judge_cost: float = 0.0


@dataclass(frozen=True, slots=True)
class Judge:
    """Ask the judge now."""


@dataclass(frozen=True, slots=True)
class Skip:
    """Time the next round without a verdict."""


@dataclass(frozen=True, slots=True)
class Stop:
    """End the rounds: ``reason`` says why."""

    reason: str


def before_round(pace: Pace, affordable: bool) -> Stop | None:
    """Whether the next round may start (module rules).

    >>> before_round(Pace(done=3), affordable=False)
    Stop(reason='call budget spent after 3 rounds')
    >>> before_round(Pace(done=3), affordable=True) is None
    True
    """
    return None if affordable else Stop(f"call budget spent after {pace.done} rounds")


def after_round(pace: Pace, measuring: float, round_seconds: float) -> Pace:
    """``pace`` after one more round that took ``round_seconds``, with ``measuring`` the
    seconds measured since the rounds began (judging excluded).

    >>> after_round(Pace(), 0.5, 0.2)
    Pace(done=1, measuring=0.5, since_judged=0.2, judge_cost=0.0)
    """
    since = pace.since_judged + round_seconds
    return replace(pace, done=pace.done + 1, measuring=measuring, since_judged=since)


def next_move(pace: Pace, plan: RoundsPlan, failed: bool) -> Judge | Skip:
    """After a round: ask the judge, or go on without a verdict (module rules).

    >>> plan = RoundsPlan(max_rounds=10)
    >>> next_move(Pace(done=4, since_judged=0.1, judge_cost=0.3), plan, failed=False)
    Skip()
    >>> next_move(Pace(done=4, since_judged=0.3, judge_cost=0.3), plan, failed=False)
    Judge()
    >>> next_move(Pace(done=10, since_judged=0.0, judge_cost=0.3), plan, failed=False)
    Judge()
    """
    spent = pace.done >= plan.max_rounds or pace.measuring >= plan.max_seconds
    if failed or spent or pace.since_judged >= pace.judge_cost:
        return Judge()
    return Skip()


def judged(pace: Pace, plan: RoundsPlan, cost: float) -> Pace:
    """``pace`` after a verdict that took ``cost`` seconds: a verdict the plan's cadence
    asks for sets the cost the next rounds are compared with.

    >>> judged(Pace(done=2, since_judged=0.4), RoundsPlan(min_rounds=2), 0.1)
    Pace(done=2, measuring=0.0, since_judged=0.0, judge_cost=0.1)
    """
    if plan.judges(pace.done, pace.measuring):
        return replace(pace, judge_cost=cost, since_judged=0.0)
    return pace
