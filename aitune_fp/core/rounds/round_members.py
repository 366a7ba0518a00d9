"""Pure decisions around the interleaved final rounds: who joins, and when to stop.

Rules:
- rounds only make sense for a strategy with a ``confidence`` rule and at least two
  participants (the baseline, when there is one, always joins);
- the contenders are the fold's leader and the candidates it does not significantly beat,
  at most ``plan.contenders`` of them (the highest speedups over the leader), in user order;
- rounds are run only where the sweeps leave the decision open: the baseline joins only
  while some contender is not settled against it by the sweeps (the interval of the
  speedup between them, from sweep samples, lies beyond ``plan.settled_speedup`` one way or
  the other), and no rounds are run with fewer than two members;
- when judging, the fold is re-run over the participants with their round samples (so
  comparisons are paired) to find the current winner ``W``; a candidate stays *open*
  while it could still become the winner: ``W`` does not significantly beat it, the upper
  end of its speedup interval over ``W`` is above ``1 + min_speedup``, and (when ``W`` is
  not the baseline) it beats the baseline or still might; the baseline stays while an open
  candidate's win over it is undecided; everyone else leaves the rounds, and the rounds
  stop when no candidate is open: ``clear`` when every comparison with the winner is
  decided (a win beyond the margin or an equivalence within it), ``settled`` otherwise
  (:mod:`aitune_fp.core.rounds.rounds_lines`);
- the rounds never stop before ``min_rounds``; between judging rounds
  (``plan.judge_every``) everyone still timed stays; they stop at ``max_rounds`` or once
  ``max_seconds`` are spent, saying so; the judge keeps no state and reads no clock (the
  elapsed time is an argument).

Longer than 260 lines: who joins the final rounds and when they stop read the same samples;
their rules sit side by side.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from returns.result import Success

from aitune_fp.core.fold import TuneState, tune
from aitune_fp.core.records import BackendProfilingResult, Profile
from aitune_fp.core.rounds.rounds_lines import budget_line, settled_line, standing
from aitune_fp.core.rounds.rounds_plan import RoundsPlan
from aitune_fp.core.stats.confidence import beats, clearly_not_faster
from aitune_fp.core.strategies.confident import metric_kind
from aitune_fp.core.strategy import Strategy


@dataclass(frozen=True, slots=True)
class RoundsVerdict:
    """Whether to stop the rounds, why, and who is still timed in the next round."""

    stop: bool
    reason: str
    active: tuple[str, ...]
    winner: str | None = None


def contenders(strategy: Strategy, state: TuneState, limit: int) -> tuple[str, ...]:
    """The candidates that join the rounds: the leader and those it does not clearly beat.

    >>> from aitune_fp.core.fold import start, step
    >>> from aitune_fp.core.strategies import confident, min_latency
    >>> s = confident(min_latency)
    >>> state = start(s, Success(Profile("eager", {1: [2.0, 2.1, 1.9, 2.0]})))
    >>> for name, ms in (("a", 1.0), ("b", 1.01), ("c", 3.0)):
    ...     state = step(s, state, Success(Profile(name, {1: [ms, ms * 1.1, ms * 0.9, ms]})))
    >>> contenders(s, state, 3)
    ('a', 'b')
    """
    if state.best is None:
        return ()
    leader = state.best.result
    close = [
        s
        for s in state.ranking
        if s.backend == state.best.backend or not strategy.compare(leader, s.result)
    ]
    ranked = sorted(close, key=lambda s: -strategy.speedup(s.result, leader))[:limit]
    keep = {s.backend for s in ranked}
    return tuple(s.backend for s in state.ranking if s.backend in keep)


@dataclass(frozen=True, slots=True)
class RoundMembers:
    """Who is timed in the final rounds, or why none are run.

    ``candidates`` are the contenders that join (user order); ``baseline`` says whether
    the baseline joins; ``reason`` explains an empty or reduced set (empty otherwise).
    """

    candidates: tuple[str, ...]
    baseline: bool
    reason: str = ""

    @property
    def size(self) -> int:
        """How many participants the rounds would time."""
        return len(self.candidates) + int(self.baseline)


def settled_by_sweeps(
    strategy: Strategy, a: BackendProfilingResult, b: BackendProfilingResult, speedup: float
) -> int:
    """How the sweeps alone settle ``a`` against ``b``: 1 (a faster), -1 (b faster) or 0 (open).

    The interval is the strategy's own (same confidence, statistic, resamples and seed)
    over the results' sweep samples; ``a`` is settled faster when the low end of its
    speedup interval over ``b`` is above ``speedup``, slower when the high end is below
    ``1 / speedup``. A strategy without a confidence rule settles nothing.

    >>> from aitune_fp.core.strategies import confident, min_latency
    >>> s = confident(min_latency)
    >>> fast = s.measure(Profile("a", {1: [1.0, 1.02, 0.98, 1.01, 0.99]})).unwrap()
    >>> slow = s.measure(Profile("b", {1: [2.0, 2.04, 1.96, 2.02, 1.98]})).unwrap()
    >>> near = s.measure(Profile("c", {1: [1.2, 1.22, 1.18, 1.21, 1.19]})).unwrap()
    >>> settled_by_sweeps(s, fast, slow, 1.5), settled_by_sweeps(s, slow, fast, 1.5)
    (1, -1)
    >>> settled_by_sweeps(s, fast, near, 1.5)
    0
    """
    rule = strategy.confidence
    if rule is None:
        return 0
    wide = replace(rule, min_speedup=speedup - 1.0)
    kind = metric_kind(strategy)
    sweep_a, sweep_b = replace(a, rounds_ms=()), replace(b, rounds_ms=())
    if beats(wide, kind, sweep_a, sweep_b):
        return 1
    return -1 if beats(wide, kind, sweep_b, sweep_a) else 0


def round_members(strategy: Strategy, state: TuneState, plan: RoundsPlan) -> RoundMembers:
    """The rounds' members after the sweeps: the contenders, and the baseline when needed.

    Rules: without a baseline, or with ``plan.settled_speedup=None``, every contender joins
    (with the baseline when there is one). Otherwise each contender is settled against
    the baseline by the sweeps or open (:func:`settled_by_sweeps`); one settled slower
    cannot win and leaves; the baseline joins while any contender is open.

    >>> from aitune_fp.core.fold import start, step
    >>> from aitune_fp.core.strategies import confident, min_latency
    >>> s = confident(min_latency)
    >>> def p(name, ms):
    ...     return Success(Profile(name, {1: [ms, ms * 1.02, ms * 0.98, ms * 1.01, ms * 0.99]}))
    >>> state = step(s, start(s, p("eager", 3.0)), p("ort", 1.0))
    >>> members = round_members(s, state, RoundsPlan())
    >>> members.candidates, members.baseline
    (('ort',), False)
    >>> members.reason
    'the sweeps settle ort against eager (3.00×): 90 % intervals beyond 1.25×'
    >>> round_members(s, step(s, state, p("inductor", 1.005)), RoundsPlan()).candidates
    ('ort', 'inductor')
    >>> round_members(s, state, RoundsPlan(settled_speedup=None))
    RoundMembers(candidates=('ort',), baseline=True, reason='')
    """
    joined = contenders(strategy, state, plan.contenders)
    margin, rule = plan.settled_speedup, strategy.confidence
    if state.baseline is None or margin is None or rule is None:
        return RoundMembers(joined, state.baseline is not None)
    base_name, base = state.baseline.backend, state.baseline.result
    results = {s.backend: s.result for s in state.ranking}
    sides = {n: settled_by_sweeps(strategy, results[n], base, margin) for n in joined}
    kept = tuple(n for n in joined if sides[n] >= 0)
    needs_base = any(side == 0 for side in sides.values())
    settled = [n for n in joined if sides[n] != 0]
    if not settled:
        return RoundMembers(kept, needs_base)
    said = ", ".join(
        f"{n} against {base_name} ({strategy.speedup(results[n], base):.2f}×)" for n in settled
    )
    pct = f"{rule.confidence * 100:g} %"
    return RoundMembers(
        kept, needs_base, f"the sweeps settle {said}: {pct} intervals beyond {margin:g}×"
    )


def _measured(strategy: Strategy, profile: Profile) -> BackendProfilingResult | None:
    return strategy.measure(profile).value_or(None)


def _openness(
    strategy: Strategy,
    x: BackendProfilingResult,
    winner: BackendProfilingResult,
    base: BackendProfilingResult | None,
) -> tuple[bool, bool]:
    """Whether ``x`` could still become the winner, and whether that hinges on the baseline.

    ``x`` is out when the winner significantly beats it or it cannot beat the winner by the
    margin, or (with a baseline that is not the winner) when it cannot beat the baseline
    by the margin; while its own win over the baseline is undecided, the baseline is needed.
    """
    rule = strategy.confidence
    if rule is None:
        return False, False
    kind = metric_kind(strategy)
    if strategy.compare(winner, x) or clearly_not_faster(rule, kind, x, winner):
        return False, False
    if base is None or base is winner or strategy.compare(x, base):
        return True, False
    if clearly_not_faster(rule, kind, x, base):
        return False, False
    return True, True


def judge_rounds(
    strategy: Strategy,
    baseline: Profile | None,
    candidates: Sequence[Profile],
    rounds_done: int,
    elapsed_s: float,
    plan: RoundsPlan,
    still_timed: Sequence[str] | None = None,
) -> RoundsVerdict:
    """Decide after ``rounds_done`` rounds whether to stop, and who stays in the rounds.

    ``baseline`` and ``candidates`` are the participants' profiles with their round samples
    so far (``Profile.rounds_ms``); ``still_timed`` names those timed in the last round
    (default: all). A participant that left never rejoins, so its round samples stay a
    prefix aligned with everyone else's; a participant whose decision depends on one that
    left is closed too. The verdict names the current winner.
    """
    profiles = (*((baseline,) if baseline else ()), *candidates)
    timed = tuple(p.backend for p in profiles if still_timed is None or p.backend in still_timed)
    if not plan.judges(rounds_done, elapsed_s):
        return RoundsVerdict(False, "", timed)
    outcome = tune(
        strategy, [Success(p) for p in candidates], Success(baseline) if baseline else None
    )
    if not isinstance(outcome, Success):
        return RoundsVerdict(True, "no participant could be measured", ())
    selection = outcome.unwrap()
    win_name, winner = selection.backend, selection.result
    base = selection.baseline.result if selection.baseline else None
    base_name = baseline.backend if baseline else None
    base_timed = base_name in timed
    still_open: list[str] = []
    needs_base = False
    for p in candidates if win_name in timed else ():
        measured = _measured(strategy, p)
        if p.backend == win_name or p.backend not in timed or measured is None:
            continue
        is_open, hinges = _openness(
            strategy, measured, winner, None if win_name == base_name else base
        )
        if is_open and (base_timed or not hinges):
            still_open.append(p.backend)
            needs_base = needs_base or hinges
    keep = {win_name, *still_open, *((base_name,) if needs_base and base_name else ())}
    active = tuple(name for name in timed if name in keep)
    stop_reason = _stop_reason(
        strategy, (win_name, winner), profiles, tuple(still_open), rounds_done, elapsed_s, plan
    )
    return RoundsVerdict(stop_reason is not None, stop_reason or "", active, win_name)


def _stop_reason(
    strategy: Strategy,
    winner: tuple[str, BackendProfilingResult],
    profiles: Sequence[Profile],
    still_open: tuple[str, ...],
    rounds_done: int,
    elapsed_s: float,
    plan: RoundsPlan,
) -> str | None:
    """Why the rounds stop now (:mod:`aitune_fp.core.rounds.rounds_lines`), or ``None``."""
    spent = rounds_done >= plan.max_rounds or elapsed_s >= plan.max_seconds
    if still_open and not spent:
        return None
    others = [
        (p.backend, r)
        for p in profiles
        if p.backend != winner[0] and (r := _measured(strategy, p)) is not None
    ]
    found = standing(strategy, winner[1], others)
    if not still_open:
        margin = strategy.confidence.min_speedup if strategy.confidence else 0.0
        return settled_line(winner[0], rounds_done, found, margin)
    return budget_line(winner[0], still_open, rounds_done, elapsed_s, plan, found)
