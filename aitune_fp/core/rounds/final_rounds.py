"""The final rounds' pure decisions around the timing: who is timed, and the fold after.

Rules:
- rounds run only with a rounds plan, a ``confidence`` rule and a leader; their time
  budget is cut to the plan's share of the sweeps' duration (:meth:`RoundsPlan.within`);
- the members come from :func:`~aitune_fp.core.rounds.round_members.round_members`: the
  contenders of the fold's state, and the baseline unless the sweeps already settle every
  contender against it; only backends that are still live (have a runner) and profiled
  can be timed, each at the batch size its sweep selected;
- fewer than two timed participants: no rounds; the state gets a note when the members
  gave a reason (the sweeps settle the decision), else stays as it is;
- after the rounds, the same fold is re-run over the same baseline and candidates, in
  the same order, the participants' profiles now carrying their round samples, so a
  stored run re-selects offline to the same answer; a note says how the rounds ended.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, replace

from returns.result import Success

from aitune_fp.core.fold import fold_all
from aitune_fp.core.records import Candidate, Profile, TuneState
from aitune_fp.core.rounds.round_members import round_members
from aitune_fp.core.rounds.rounds_plan import RoundsPlan
from aitune_fp.core.strategy import Strategy


@dataclass(frozen=True, slots=True)
class RoundsSetup:
    """The rounds to run: the plan, the timed candidates and the baseline's part.

    ``candidates`` pairs each timed candidate with its selected batch size, in user
    order; ``baseline`` names the baseline and its batch size when it is judged (it is
    timed only when ``time_baseline``); ``reason`` is the members' explanation, if any.
    """

    plan: RoundsPlan
    candidates: tuple[tuple[str, int], ...]
    baseline: tuple[str, int] | None
    time_baseline: bool
    reason: str = ""

    @property
    def runs(self) -> bool:
        """Whether at least two participants would be timed."""
        return len(self.candidates) + int(self.time_baseline) >= 2

    @property
    def timed(self) -> tuple[str, ...]:
        """The names timed, baseline first."""
        base = (self.baseline[0],) if self.baseline and self.time_baseline else ()
        return (*base, *(name for name, _ in self.candidates))


def setup_rounds(
    strategy: Strategy,
    state: TuneState,
    profiled: Collection[str],
    live: Collection[str],
    baseline: str | None,
    sweep_seconds: float | None = None,
) -> RoundsSetup | None:
    """The rounds ``strategy`` asks for after the sweeps, or ``None`` when it asks none.

    ``profiled`` names the candidates with a profile, ``live`` the backends with a runner,
    ``baseline`` the baseline's backend when it profiled.

    >>> from aitune_fp import Profile, confident, min_latency
    >>> s = confident(min_latency)
    >>> from aitune_fp.core.fold import fold_all
    >>> state = fold_all(s, [Success(Profile("a", {1: [1.0, 1.1]}))],
    ...                  Success(Profile("eager", {1: [1.05, 1.0]})))
    >>> r = setup_rounds(s, state, {"a"}, {"a", "eager"}, "eager")
    >>> r.timed, r.runs
    (('eager', 'a'), True)
    >>> setup_rounds(min_latency, state, {"a"}, {"a", "eager"}, "eager") is None
    True
    """
    plan = strategy.plan.rounds
    if plan is None or strategy.confidence is None or state.best is None:
        return None
    plan = plan.within(sweep_seconds)
    members = round_members(strategy, state, plan)
    sizes = {s.backend: s.result.selected_batch_size for s in state.ranking}
    chosen = tuple(
        (name, sizes[name]) for name in members.candidates if name in live and name in profiled
    )
    base = None
    if baseline is not None and state.baseline is not None and baseline in live:
        base = (baseline, state.baseline.result.selected_batch_size)
    timed_base = base is not None and members.baseline
    return RoundsSetup(plan, chosen, base, timed_base, members.reason)


def skipped(state: TuneState, setup: RoundsSetup) -> TuneState:
    """The state when the rounds do not run: noted when the members said why."""
    if not setup.reason:
        return state
    return replace(state, notes=(*state.notes, f"no final rounds: {setup.reason}"))


def refold(
    strategy: Strategy,
    baseline: Profile | None,
    fed: Iterable[Candidate],
    timed: Mapping[str, Profile],
    note: str,
) -> TuneState:
    """The fold over the same baseline and candidates with the ``timed`` profiles swapped in.

    >>> from aitune_fp import Profile, min_latency
    >>> a = Profile("a", {1: [2.0]})
    >>> s = refold(min_latency, None, [Success(a)], {"a": Profile("a", {1: [1.0]})}, "n")
    >>> s.best.result.metric, s.notes
    (1.0, ('n',))
    """
    new_base = None if baseline is None else timed.get(baseline.backend, baseline)
    state = fold_all(
        strategy,
        (result.map(lambda p: timed.get(p.backend, p)) for result in fed),
        Success(new_base) if new_base is not None else None,
    )
    return replace(state, notes=(*state.notes, note))


def rounds_note(rounds: int, seconds: float, reason: str, setup: RoundsSetup) -> str:
    """How the rounds ended, and why their members were chosen.

    >>> rounds_note(6, 0.25, "decision clear", RoundsSetup(RoundsPlan(), (), None, False))
    'final rounds (6 rounds, 0.2 s): decision clear'
    """
    note = f"final rounds ({rounds} rounds, {seconds:.1f} s): {reason}"
    return f"{note}; {setup.reason}" if setup.reason else note
