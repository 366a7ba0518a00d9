"""The judges a timing command carries: frozen values naming their rule and its parameters.

Rules:
- an interpreter asks a command's judge after every round: ``judge(samples so far,
  rounds done, seconds elapsed, still timed) -> RoundsVerdict`` (:data:`Judging`, the
  shape the effect layer's timing loops take);
- a judge is data: its type names the rule, its fields are every parameter the rule
  reads, and calling it applies that rule (:func:`apply`, which matches on the type), so
  two judges are equal exactly when they judge alike and a replay compares them like any
  other part of a command;
- :class:`RoundsJudge` is the final rounds' rule
  (:func:`~aitune_fp.core.rounds.round_members.judge_rounds` over the participants' sweep
  profiles with the round samples so far); :class:`VerifyJudge` the verification's (the
  core's judgement of the samples so far from ``MIN_ROUNDS`` on, stopping on evidence or
  on its budget); :class:`NoJudge` stops after the first round.

>>> NoJudge()({"a": [1.0]}, 1, 0.1, ("a", "b"))
RoundsVerdict(stop=True, reason='no judge', active=('a', 'b'), winner=None)
>>> NoJudge() == NoJudge()
True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import cast

from aitune_fp.core.records import Profile
from aitune_fp.core.rounds.round_members import RoundsVerdict, judge_rounds
from aitune_fp.core.rounds.rounds_plan import RoundsPlan
from aitune_fp.core.session.verify_plan import VerifyPlan, judged
from aitune_fp.core.strategy import Strategy
from aitune_fp.core.verification.judge import MIN_ROUNDS
from aitune_fp.core.verification.verification_plan import evidence_verdict

Samples = Mapping[str, Sequence[float]]
Judging = Callable[[Samples, int, float, tuple[str, ...]], RoundsVerdict]
"""``judge(samples so far, rounds done, seconds elapsed, still timed) -> verdict``."""


class _Applied:
    """Calling a judge applies its rule (:func:`apply`)."""

    __slots__ = ()

    def __call__(
        self, so_far: Samples, done: int, elapsed: float, still: tuple[str, ...]
    ) -> RoundsVerdict:
        """The rule applied to the samples so far."""
        return apply(cast("Judge", self), so_far, done, elapsed, still)


@dataclass(frozen=True, slots=True)
class RoundsJudge(_Applied):
    """The final rounds' rule: ``strategy`` judges ``everyone`` (each participant's sweep
    profile and batch size, the baseline first when ``has_base``) under ``plan``."""

    strategy: Strategy
    everyone: tuple[tuple[Profile, int], ...]
    has_base: bool
    plan: RoundsPlan


@dataclass(frozen=True, slots=True)
class VerifyJudge(_Applied):
    """The verification's rule over ``plan`` (the pick, its challengers, the budget)."""

    plan: VerifyPlan


@dataclass(frozen=True, slots=True)
class NoJudge(_Applied):
    """No rule: stop after the first round."""


Judge = RoundsJudge | VerifyJudge | NoJudge
"""Every judge a command can carry."""


def with_rounds(profile: Profile, batch_size: int, samples: Sequence[float]) -> Profile:
    """``profile`` carrying ``samples`` as its round samples at ``batch_size`` (unchanged
    without samples).

    >>> dict(with_rounds(Profile("a", {1: [1.0]}), 1, [0.9]).rounds_ms)
    {1: (0.9,)}
    """
    return replace(profile, rounds_ms={batch_size: tuple(samples)}) if samples else profile


def apply(
    judge: Judge, so_far: Samples, done: int, elapsed: float, still: tuple[str, ...]
) -> RoundsVerdict:
    """The verdict of ``judge``'s rule on the samples so far (see the module's rules)."""
    match judge:
        case RoundsJudge(strategy, everyone, has_base, plan):
            now = [with_rounds(p, bs, so_far.get(p.backend, ())) for p, bs in everyone]
            base, cands = (now[0], now[1:]) if has_base else (None, now)
            return judge_rounds(strategy, base, cands, done, elapsed, plan, still_timed=still)
        case VerifyJudge(vp):
            v = judged(vp, so_far, elapsed) if done >= MIN_ROUNDS else None
            outcome = v.outcome if v is not None else "too few rounds"
            return evidence_verdict(vp.seconds, vp.plan, done, elapsed, still, outcome)
    return RoundsVerdict(True, "no judge", still)
