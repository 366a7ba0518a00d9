"""Who takes part in a verification, and how long it is timed (pure).

Rules:
- the challengers are the selection's other scored backends, the baseline included, closest
  to the winner first by the strategy's speedup over it, at most ``CHALLENGERS``
  (:func:`challengers`, :func:`runner_ups`: the driver keeps their runners alive);
- a runner-up beyond the first takes part only while the sweeps leave it within
  ``SETTLED`` (1.25×) of the winner (:func:`unsettled`): a backend the sweeps put 4×
  behind cannot overturn the pick, and each participant costs rounds;
- under a throughput metric the winner also takes part at other batch sizes of its sweep
  (:func:`plateau`): the neighbouring ones and those whose sweep figure is within
  ``PLATEAU`` (5 %) of the pick's, closest first, at most ``BATCH_SIZES`` (3). On a
  throughput plateau (the demo CNN's ONNX Runtime runs 100 to 104 µs per sample from batch
  size 4 to 64) the sweep's few calls per batch size cannot tell the points apart. One
  counts only when the strategy accepts it measured on its verification samples alone
  (:func:`admits`), and the selection takes the strategy's result at that batch size when
  it becomes the pick (:func:`at_batch_size`);
- the timing is interleaved rounds, warm-up included, that stop on evidence: as soon as
  the pick is clear or settled, else at the verification's seconds, extended to at most
  ``EXTEND`` (3) times them while a challenger leans beyond the margin without an
  interval that shows it, or while too few rounds were timed to judge
  (:func:`timing_plan`, :func:`evidence_verdict`); the budget grows only where more rounds
  can move the pick. :func:`timing_verdict` times for the seconds
  with no other stop (the benchmark's re-measurement window).
"""

from __future__ import annotations

from collections.abc import Sequence

from returns.result import Success

from aitune_fp.core.records import BackendProfilingResult, Profile, Scored, Selection
from aitune_fp.core.rounds.round_members import RoundsVerdict
from aitune_fp.core.rounds.rounds_plan import RoundsPlan
from aitune_fp.core.strategy import Strategy
from aitune_fp.core.verification.judge import Paired, scored

CHALLENGERS = 2
MAX_ROUNDS = 1_000_000
SETTLED = 1.25
PLATEAU = 0.05
BATCH_SIZES = 3
EXTEND = 3.0


def challengers(strategy: Strategy, selection: Selection, limit: int) -> tuple[str, ...]:
    """The runner-ups to verify against: best speedup over the winner first, at most ``limit``.

    >>> from aitune_fp import Profile, min_latency, tune
    >>> from returns.result import Success
    >>> p = lambda n, ms: Success(Profile(n, {1: [ms]}))
    >>> s = tune(min_latency, [p("a", 1.0), p("b", 3.0), p("c", 1.5)], p("eager", 2.0))
    >>> challengers(min_latency, s.unwrap(), 2)
    ('c', 'eager')
    """
    winner = Scored(selection.backend, selection.result)
    return runner_ups(strategy, winner, scored(selection), limit)


def runner_ups(
    strategy: Strategy, winner: Scored, scored: Sequence[Scored], limit: int
) -> tuple[str, ...]:
    """The ``limit`` backends of ``scored`` (the winner left out) closest to ``winner``:
    by the strategy's speedup over it, best first (the driver keeps their runners alive)."""
    others = [s for s in scored if s.backend != winner.backend]
    ranked = sorted(others, key=lambda s: -strategy.speedup(s.result, winner.result))
    return tuple(s.backend for s in ranked[: max(limit, 0)])


def unsettled(
    strategy: Strategy, selection: Selection, names: Sequence[str], settled: float = SETTLED
) -> tuple[str, ...]:
    """``names`` (runner-ups, closest first) keeping the first, and the others while the
    winner's sweep speedup over them is below ``settled``.

    >>> from aitune_fp import Profile, min_latency, tune
    >>> from returns.result import Success
    >>> p = lambda n, ms: Success(Profile(n, {1: [ms]}))
    >>> s = tune(min_latency, [p("a", 1.0), p("b", 3.0), p("c", 1.2)], p("eager", 2.0)).unwrap()
    >>> unsettled(min_latency, s, ("c", "eager", "b"))
    ('c',)
    """
    results = {x.backend: x.result for x in scored(selection)}
    kept = [
        n
        for n in names[1:]
        if n in results and strategy.speedup(selection.result, results[n]) < settled
    ]
    return (*names[:1], *kept)


def plateau(
    strategy: Strategy,
    profile: Profile,
    selected: int,
    within: float = PLATEAU,
    limit: int = BATCH_SIZES,
) -> tuple[int, ...]:
    """The winner's other batch sizes to verify: the neighbours of ``selected`` in its sweep
    and those whose result (the strategy's, at that batch size alone) is within ``within``
    of the pick's; best first, at most ``limit``.

    >>> from aitune_fp import max_throughput
    >>> flat = Profile("a", {1: [1.0], 2: [1.2], 4: [2.0], 8: [3.9], 16: [8.0]})
    >>> plateau(max_throughput, flat, 4)
    (8, 16, 2)
    """
    pick = at_batch_size(strategy, profile, selected)
    if pick is None:
        return ()
    near = set(batch_neighbours(profile, selected))
    found = []
    for bs in profile.batch_sizes:
        result = at_batch_size(strategy, profile, bs)
        if bs == selected or result is None:
            continue
        speedup = strategy.speedup(result, pick)
        if bs in near or speedup >= 1.0 - within:
            found.append((-speedup, bs))
    return tuple(bs for _, bs in sorted(found)[: max(limit, 0)])


def batch_neighbours(profile: Profile, selected: int) -> tuple[int, ...]:
    """The batch sizes next to ``selected`` in ``profile``'s sweep (below, then above).

    >>> batch_neighbours(Profile("a", {1: [1.0], 2: [1.0], 4: [1.0]}), 2)
    (1, 4)
    >>> batch_neighbours(Profile("a", {1: [1.0], 2: [1.0]}), 2)
    (1,)
    >>> batch_neighbours(Profile("a", {1: [1.0]}), 8)
    ()
    """
    sizes = profile.batch_sizes
    if selected not in sizes:
        return ()
    i = sizes.index(selected)
    return tuple(sizes[j] for j in (i - 1, i + 1) if 0 <= j < len(sizes))


def at_batch_size(
    strategy: Strategy, profile: Profile, batch_size: int
) -> BackendProfilingResult | None:
    """The strategy's result for ``profile`` restricted to ``batch_size`` (``None``: the
    strategy rejects it there, or it was not measured).

    >>> from aitune_fp import max_throughput
    >>> at_batch_size(max_throughput, Profile("a", {1: [1.0], 2: [1.0]}), 1).throughput
    1000.0
    """
    if batch_size not in profile.latencies_ms:
        return None
    only = Profile(
        profile.backend,
        {batch_size: profile.latencies_ms[batch_size]},
        profile.sweep_stop,
        profile.input_mode,
        {k: v for k, v in profile.rounds_ms.items() if k == batch_size},
        profile.peak_memory_mb,
        {k: v for k, v in profile.batches.items() if k == batch_size},
    )
    measured = strategy.measure(only)
    return measured.unwrap() if isinstance(measured, Success) else None


def admits(strategy: Strategy, paired: Paired) -> bool:
    """Whether the strategy accepts ``paired`` measured on its verification samples alone.

    >>> from aitune_fp import latency_budget
    >>> budget = latency_budget(5.0)
    >>> admits(budget, Paired("a", 32, (4.0, 4.2))), admits(budget, Paired("a", 64, (8.0,)))
    (True, False)
    """
    profile = Profile(paired.backend, {paired.batch_size: paired.samples_ms})
    return isinstance(strategy.measure(profile), Success)


def timing_plan(seconds: float, extend: float = 1.0) -> RoundsPlan:
    """The interleaved rounds' plan for a verification of ``seconds`` (warm-up included),
    its time bound ``extend`` times that (:func:`evidence_verdict`).

    >>> timing_plan(3.0).max_seconds, timing_plan(3.0, EXTEND).max_seconds
    (3.0, 9.0)
    """
    return RoundsPlan(
        contenders=1,
        min_rounds=2,
        max_rounds=MAX_ROUNDS,
        max_seconds=seconds * extend,
        judge_every=1,
        settled_speedup=None,
        sweep_share=None,
    )


def timing_verdict(
    plan: RoundsPlan, rounds_done: int, elapsed_s: float, active: tuple[str, ...]
) -> RoundsVerdict:
    """Keep timing every participant until the plan's time or round budget is spent.

    >>> timing_verdict(timing_plan(1.0), 5, 0.5, ("a", "b")).stop
    False
    >>> timing_verdict(timing_plan(1.0), 5, 1.0, ("a", "b")).reason
    'verification budget spent: 5 rounds in 1 s'
    """
    if elapsed_s >= plan.max_seconds or rounds_done >= plan.max_rounds:
        reason = f"verification budget spent: {rounds_done} rounds in {elapsed_s:.3g} s"
        return RoundsVerdict(True, reason, active)
    return RoundsVerdict(False, "", active)


def evidence_verdict(
    seconds: float,
    plan: RoundsPlan,
    rounds_done: int,
    elapsed_s: float,
    active: tuple[str, ...],
    outcome: str,
) -> RoundsVerdict:
    """The verification's stop (pure): on evidence, or on its budget, adapted to the gap.

    ``outcome`` is the judge's on the rounds so far
    (:func:`~aitune_fp.core.verification.judge.outcome_of`). The timing stops as soon as
    the pick is ``clear`` or ``settled``; at ``seconds`` (the asked budget) unless it is
    ``leaning`` (a challenger's point beyond the margin, its interval not yet: more rounds
    can move the pick) or has ``too few rounds`` to be judged at all; and in any case at
    ``plan.max_seconds`` (``EXTEND`` times the asked budget) or ``plan.max_rounds``.

    >>> plan = timing_plan(3.0, EXTEND)
    >>> evidence_verdict(3.0, plan, 8, 1.0, ("a", "b"), "clear").reason
    'decided after 8 rounds (clear)'
    >>> [evidence_verdict(3.0, plan, 20, 3.2, ("a", "b"), o).stop for o in ("undecided", "leaning")]
    [True, False]
    >>> evidence_verdict(3.0, plan, 50, 9.0, ("a", "b"), "leaning").reason
    'verification budget spent: 50 rounds in 9 s (the bound: 3× the 3 s asked)'
    """
    if outcome in ("clear", "settled"):
        return RoundsVerdict(True, f"decided after {rounds_done} rounds ({outcome})", active)
    spent = f"verification budget spent: {rounds_done} rounds in {elapsed_s:.3g} s"
    if elapsed_s >= plan.max_seconds or rounds_done >= plan.max_rounds:
        bound = f"the bound: {plan.max_seconds / seconds:g}× the {seconds:g} s asked"
        return RoundsVerdict(True, f"{spent} ({bound})", active)
    if elapsed_s >= seconds and outcome not in ("leaning", "too few rounds"):
        return RoundsVerdict(True, spent, active)
    return RoundsVerdict(False, "", active)
