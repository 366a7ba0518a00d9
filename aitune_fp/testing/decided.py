"""Hypothesis generators of recorded runs whose decision went through the final rounds
and the verification, made by the real pure pieces the shell runs.

Rules:
- :func:`decide` is the pure pipeline after the sweeps, as the shell drives it: the fold,
  the final rounds' samples swapped into the timed profiles and the fold re-run
  (:func:`~aitune_fp.core.rounds.final_rounds.refold`'s contract), then the verification
  judged (:func:`~aitune_fp.core.verification.judge.judge`) and applied
  (:func:`~aitune_fp.core.verification.judge.verified`); it gives the
  :class:`~aitune_fp.core.record.run_record.RunRecord` the shell would write;
- :func:`decided_runs` draws its inputs: a shipped strategy (``confident`` three times in
  four), candidates and (three times in four) an ``eager`` baseline from
  :mod:`.generators`, round samples for some of the scored backends, and (three times in
  four) a verification of the winner against some other scored backends and (throughput)
  itself at other measured batch sizes; samples are a level
  times near-one factors, so moves, overturns and ties all come up, and in half the
  verifications one challenger runs the pick's samples 30 % faster per sample, so a
  verification that moves the pick is common, not a rarity.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from hypothesis import strategies as st
from pyrsistent import pmap
from returns.result import Success

from aitune_fp.core.fold import tune
from aitune_fp.core.record.run_record import BackendOutcome, RunRecord
from aitune_fp.core.records import BackendProfilingResult, Candidate, Profile, Selection
from aitune_fp.core.strategies.confident import confident
from aitune_fp.core.strategies.registry import strategy_config
from aitune_fp.core.strategy import Strategy
from aitune_fp.core.verification.judge import Paired, Verification, judge, scored, verified
from aitune_fp.core.verification.verification_plan import admits, at_batch_size
from aitune_fp.testing.generators import (
    BASELINE_NAME,
    TIE_POOL,
    candidate_lists,
    candidates,
    near_one,
    shipped_strategies,
)

Samples = tuple[float, ...]


@dataclass(frozen=True, slots=True)
class Timings:
    """What was timed after the sweeps: round samples by backend (at the batch size its
    sweep selected), and the verification's participants by ``(backend, batch size)``
    (the winner's entry is the pick's; empty: no verification)."""

    rounds: Mapping[str, Samples] = field(default_factory=dict)
    verification: Mapping[tuple[str, int], Samples] = field(default_factory=dict)


def _outcome(c: Candidate) -> BackendOutcome:
    """The backend's outcome as the record stores it: its profile or its failure."""
    ok = isinstance(c, Success)
    profile = c.unwrap() if ok else None
    failure = None if ok else c.failure()
    return BackendOutcome(_name(c), _name(c), "0" * 16, pmap(), profile=profile, failure=failure)


def _name(c: Candidate) -> str:
    return str(c.unwrap().backend if isinstance(c, Success) else c.failure().backend)


def _with_rounds(c: Candidate | None, sizes: Mapping[str, int], t: Timings) -> Candidate | None:
    if c is None or not isinstance(c, Success):
        return c
    p: Profile = c.unwrap()
    if p.backend not in t.rounds or p.backend not in sizes:
        return c
    return Success(replace(p, rounds_ms={sizes[p.backend]: t.rounds[p.backend]}))


def _verify(
    strategy: Strategy, sel: Selection, profiles: Mapping[str, Profile], t: Timings
) -> tuple[Verification | None, Selection]:
    """The verification and the verified selection, or ``(None, sel)`` when none can run."""
    pick = (sel.backend, sel.result.selected_batch_size)
    if pick not in t.verification:
        return None, sel
    kind = strategy.metric.kind or "latency"
    sizes = {s.backend: s.result.selected_batch_size for s in scored(sel)}
    profile = profiles.get(sel.backend)
    others: list[Paired] = []
    alternatives: dict[tuple[str, int], BackendProfilingResult | None] = {}
    for (name, bs), samples in t.verification.items():
        if (name, bs) == pick:
            continue
        if name != sel.backend and sizes.get(name) == bs:
            others.append(Paired(name, bs, samples))
        elif name == sel.backend and profile is not None and kind == "throughput":
            paired = Paired(name, bs, samples, f"{name}@{bs}")
            result = at_batch_size(strategy, profile, bs)
            if result is not None and admits(strategy, paired):
                others.append(paired)
                alternatives[(name, bs)] = result
    if not others:
        return None, sel
    v = judge(Paired(*pick, t.verification[pick]), others, kind, seconds=1.0)
    return v, verified(sel, v, alternatives)


def decide(
    strategy: Strategy,
    given: Sequence[Candidate],
    baseline: Candidate | None,
    timings: Timings = Timings(),
) -> RunRecord:
    """The record of a run that profiled ``given`` and ``baseline``, then timed ``timings``."""
    first = tune(strategy, given, baseline).value_or(None)
    sizes = (
        {} if first is None else {s.backend: s.result.selected_batch_size for s in scored(first)}
    )
    fed = tuple(_with_rounds(c, sizes, timings) for c in given)
    base = _with_rounds(baseline, sizes, timings)
    outcome = tune(strategy, [c for c in fed if c is not None], base)
    profiles = {p.backend: p for c in (*fed, base) if isinstance(c, Success) for p in [c.unwrap()]}
    v, selection = None, outcome.value_or(None)
    if selection is not None:
        v, selection = _verify(strategy, selection, profiles, timings)

    cands = tuple(_outcome(c) for c in fed if c is not None)
    return RunRecord(
        model="generated",
        device="cpu",
        strategy=pmap(strategy_config(strategy, [c.backend for c in cands])),
        baseline=None if base is None else _outcome(base),
        candidates=cands,
        selection=selection,
        error=outcome.swap().value_or(None),
        environment=pmap(),
        input_spec=pmap(),
        max_batch_size=None,
        verification=v,
    )


@st.composite
def _samples(draw: st.DrawFn, rounds: int) -> Samples:
    level = draw(st.sampled_from(TIE_POOL))
    return tuple(level * draw(near_one()) for _ in range(rounds))


@st.composite
def decided_runs(draw: st.DrawFn) -> RunRecord:
    """A recorded run whose decision may have gone through final rounds and a verification."""
    strategy = draw(shipped_strategies())
    if draw(st.integers(0, 3)) < 3:
        strategy = confident(strategy, resamples=50)
    given = draw(candidate_lists(min_size=1, max_size=3))
    baseline = None if draw(st.integers(0, 3)) == 0 else draw(candidates(backend=BASELINE_NAME))
    first = tune(strategy, given, baseline).value_or(None)
    if first is None:
        return decide(strategy, given, baseline)
    n = draw(st.integers(1, 8))
    timed = draw(st.lists(st.sampled_from([s.backend for s in scored(first)]), unique=True))
    rounds = {name: draw(_samples(n)) for name in timed}
    record = decide(strategy, given, baseline, Timings(rounds))
    sel = record.selection
    if sel is None or draw(st.integers(0, 3)) == 0:
        return record
    plant = draw(st.booleans())  # half the verifications: a challenger clearly faster
    m = draw(st.integers(8, 10)) if plant else draw(st.one_of(st.just(8), st.integers(1, 10)))
    pick = (sel.backend, sel.result.selected_batch_size)
    names = [(s.backend, s.result.selected_batch_size) for s in scored(sel)]
    profile = next((o.profile for o in record.outcomes if o.backend == sel.backend), None)
    names += [(sel.backend, bs) for bs in (profile.batch_sizes if profile else ())]
    names = [who for who in dict.fromkeys(names) if who != pick]
    if not names:
        return record
    chosen = draw(st.lists(st.sampled_from(names), unique=True, min_size=1, max_size=3))
    verification = {who: draw(_samples(m)) for who in dict.fromkeys([pick, *chosen])}
    if plant:
        faster = chosen[0]
        per_sample = faster[1] / pick[1] if strategy.metric.kind == "throughput" else 1.0
        verification[faster] = tuple(x * 0.7 * per_sample for x in verification[pick])
    return decide(strategy, given, baseline, Timings(rounds, verification))
