"""Interleaved final rounds: the timing loop, and its adapter for backends on a device.

Rules (the pure decisions live in :mod:`aitune_fp.core.measure.rounds`):
- :func:`interleave` is the loop, with its clock and its timed call injected: it warms
  every participant up, then times rounds, each participant once per round in the order
  of :func:`rotation` (A B C, B C A, …), so drift and noisy neighbours hit every
  participant alike and pair up by round; after a round the judge (pure, injected) says
  whether the decision is clear, who stays, or that the round or time budget is spent;
  ``affordable`` can refuse a round before it starts (a call budget);
- the judge (a few bootstraps) is skipped while the rounds timed since its last verdict
  took less clock time than that verdict did, so judging never costs more than the
  rounds themselves; the time budgets (``plan.max_seconds``) count the measuring, the
  warm-up and round calls, not the judging;
- a participant whose call raises leaves the rounds (its samples stay a prefix); nothing
  here raises for a backend's failure; every call runs under the open call deadline
  (:mod:`aitune_fp.effects.call_guard`), so a hang ends as such a failure;
- on a device a participant's turn in a round is a burst (:func:`timed_burst`, the plan's
  ``burst``): a rest, settling calls, then timed calls whose median is the round's
  sample, so each backend is timed at the steady state it has when it runs alone, not
  right after another runtime took its threads and caches or left its threads spinning;
- :func:`run_rounds` times backends' runners on a device with it: every participant at
  the batch size its sweep selected, with inputs from the same kind of rotating pool as
  the profiler (at most 8 batches: between two calls of one backend the others run,
  which already evicts its inputs from the caches), after one priming call and
  ``plan.warmup_calls`` untimed calls; the benchmark's simulated machine drives the same
  loop with a call-count clock.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import torch

from aitune_fp.core.measure.burst import Burst, sample, settles, times
from aitune_fp.core.measure.rounds import RoundsVerdict, judge_rounds
from aitune_fp.core.measure.rounds_plan import RoundsPlan, rotation
from aitune_fp.core.measure.warmup import fixed_warmup
from aitune_fp.core.records import Profile
from aitune_fp.core.strategy import Strategy
from aitune_fp.effects.call_guard import guarded
from aitune_fp.effects.inputs import Samples
from aitune_fp.effects.machine import synchronize
from aitune_fp.effects.profiler import (
    ProfileSettings,
    call_timer,
    call_with,
    input_pool,
    parallel_op,
    warm_up,
)

log = logging.getLogger("aitune_fp")


@dataclass(frozen=True, slots=True)
class Participant:
    """A backend in the rounds: its name, runner, swept profile and selected batch size."""

    name: str
    runner: Callable[..., Any]
    profile: Profile
    batch_size: int


@dataclass(frozen=True, slots=True)
class RoundsOutcome:
    """The participants' profiles with their round samples, and how the rounds ended."""

    profiles: tuple[Profile, ...]
    rounds: int
    reason: str
    seconds: float


ROUNDS_POOL = 8


def _calls(
    p: Participant, samples: Samples, device: torch.device, settings: ProfileSettings
) -> list[Callable[[], Any]]:
    small = replace(settings, max_pool=min(settings.max_pool, ROUNDS_POOL))
    pool = input_pool(samples, p.batch_size, device, small)
    return [guarded(partial(call_with, p.runner, b.args, dict(b.kwargs))) for b in pool]


def _warmed(
    p: Participant,
    samples: Samples,
    device: torch.device,
    settings: ProfileSettings,
    plan: RoundsPlan,
) -> list[Callable[[], Any]]:
    """The participant's calls after priming and warm-up; none when that raised."""
    try:
        calls = _calls(p, samples, device, settings)
        for i in range(plan.warmup_calls + 1):
            calls[i % len(calls)]()
    except Exception as error:  # a failing backend stays out of the rounds
        log.warning("%s failed before the final rounds: %s", p.name, error)
        return []
    return calls


def _with_rounds(p: Participant, timed: list[float]) -> Profile:
    return replace(p.profile, rounds_ms={p.batch_size: timed}) if timed else p.profile


@dataclass(frozen=True, slots=True)
class Timed:
    """What :func:`interleave` timed: each participant's round samples, and how it ended."""

    samples: Mapping[str, tuple[float, ...]]
    rounds: int
    reason: str
    seconds: float


def timed_burst(
    calls: Sequence[Callable[[], Any]],
    timer: Callable[[Callable[[], Any]], float],
    burst: Burst,
    start: int,
    before: Callable[[], None] | None = None,
    rest: Callable[[float], None] = lambda ms: time.sleep(ms / 1000.0),
) -> tuple[float, int]:
    """One burst of ``calls`` (cycled from index ``start``): it rests, settles, then times
    (:mod:`aitune_fp.core.measure.burst`); its sample in ms, and the index to start the
    next burst at. The phases' lengths count the calls' timed ms.

    >>> calls = [lambda: None] * 3
    >>> ms = iter([5.0, 1.0, 1.0, 2.0])
    >>> timed_burst(calls, lambda c: next(ms), Burst(settle_calls=1, min_calls=3), 2)
    (1.0, 6)
    """
    if burst.rest_ms > 0.0:
        rest(burst.rest_ms)
    index = start

    def one() -> float:
        nonlocal index
        if before is not None:
            before()
        ms = timer(calls[index % len(calls)])
        index += 1
        return ms

    settled, spent = 0, 0.0
    while settles(burst, settled, spent):
        spent, settled = spent + one(), settled + 1
    timed: list[float] = []
    spent = 0.0
    while times(burst, len(timed), spent):
        timed.append(one())
        spent += timed[-1]
    return sample(burst, timed), index


def burst_caller(
    calls: Mapping[str, Sequence[Callable[[], Any]]],
    timer: Callable[[Callable[[], Any]], float],
    burst: Burst,
    before: Callable[[], None] | None = None,
) -> Callable[[str, int], float]:
    """:func:`interleave`'s ``call`` on a device: one :func:`timed_burst` of the named
    participant's ``calls`` (filled in by its warm-up), each participant resuming its input
    pool where its previous burst ended."""
    position: dict[str, int] = {}

    def call(name: str, _round_index: int) -> float:
        ms, position[name] = timed_burst(calls[name], timer, burst, position.get(name, 0), before)
        return ms

    return call


Judge = Callable[[Mapping[str, Sequence[float]], int, float, tuple[str, ...]], RoundsVerdict]


def interleave(
    names: Sequence[str],
    warm: Callable[[str], bool],
    call: Callable[[str, int], float],
    judge: Judge,
    plan: RoundsPlan,
    *,
    clock: Callable[[], float] = time.monotonic,
    affordable: Callable[[tuple[str, ...]], bool] = lambda _order: True,
) -> Timed:
    """Time ``names`` in interleaved rounds until the judge stops them.

    ``warm(name)`` primes and warms a participant up (``False``: it failed and stays out);
    ``call(name, round_index)`` times one call in ms (raising: the participant leaves);
    ``judge(samples, rounds_done, elapsed, still_timed)`` is the core's verdict; ``clock``
    reads seconds (any monotonic count will do); ``affordable(order)`` may refuse the next
    round before it starts.

    >>> from itertools import count
    >>> tick = count()
    >>> def judge(samples, done, elapsed, timed):
    ...     return RoundsVerdict(done >= 3, "three rounds" if done >= 3 else "", timed)
    >>> t = interleave(["a", "b"], lambda n: True, lambda n, i: 1.0 + i, judge,
    ...                RoundsPlan(), clock=lambda: float(next(tick)))
    >>> t.samples, t.rounds, t.reason
    ({'a': (1.0, 2.0, 3.0), 'b': (1.0, 2.0, 3.0)}, 3, 'three rounds')
    """
    began = clock()
    timed: dict[str, list[float]] = {name: [] for name in names}
    active = tuple(name for name in names if warm(name))
    done, reason = 0, "no rounds were run"
    judge_cost, since_judged, judging = 0.0, 0.0, 0.0
    while len(active) >= 2:
        order = rotation(active, done)
        if not affordable(order):
            reason = f"call budget spent after {done} rounds"
            break
        failed = []
        round_began = clock()
        for name in order:
            try:
                timed[name].append(call(name, done))
            except Exception as error:  # a failing backend leaves the rounds
                log.warning("%s failed during the final rounds: %s", name, error)
                failed.append(name)
        done += 1
        now = clock()
        # the budget counts measuring (warm-up and round calls), not judging
        elapsed, since_judged = now - began - judging, since_judged + now - round_began
        budget_spent = done >= plan.max_rounds or elapsed >= plan.max_seconds
        if not (failed or budget_spent) and since_judged < judge_cost:
            continue  # judging costs more than the rounds since the last judgement
        still = tuple(n for n in active if n not in failed)
        verdict = judge(timed, done, elapsed, still)
        active = tuple(n for n in verdict.active if n not in failed)
        spent = clock() - now
        judging += spent
        if plan.judges(done, elapsed):
            judge_cost, since_judged = spent, 0.0
        if verdict.stop:
            reason = verdict.reason
            break
    else:
        reason = f"after {done} rounds fewer than two participants were left"
    samples = {name: tuple(values) for name, values in timed.items()}
    return Timed(samples, done, reason, clock() - began)


def run_rounds(
    strategy: Strategy,
    baseline: Participant | None,
    candidates: Sequence[Participant],
    samples: Samples,
    device: torch.device,
    plan: RoundsPlan,
    settings: ProfileSettings = ProfileSettings(),
    *,
    time_baseline: bool = True,
) -> RoundsOutcome:
    """Time ``baseline`` and ``candidates`` in interleaved rounds until the judge stops.

    With ``time_baseline=False`` the baseline is judged on its sweep samples only and
    never called here.
    """
    everyone = (*((baseline,) if baseline else ()), *candidates)
    timed_ones = tuple(p for p in everyone if time_baseline or p is not baseline)
    timer = call_timer(device, settings)
    before = parallel_op(device) if settings.input_mode == "parallel_op" else None
    calls: dict[str, list[Callable[[], Any]]] = {}
    call = burst_caller(calls, timer, plan.burst, before)

    def warm(name: str) -> bool:
        p = next(q for q in timed_ones if q.name == name)
        calls[name] = _warmed(p, samples, device, settings, plan)
        synchronize(device)
        return bool(calls[name])

    def judge(
        so_far: Mapping[str, Sequence[float]], done: int, elapsed: float, still: tuple[str, ...]
    ) -> RoundsVerdict:
        profiles = {p.name: _with_rounds(p, list(so_far.get(p.name, ()))) for p in everyone}
        return judge_rounds(
            strategy,
            profiles[baseline.name] if baseline else None,
            [profiles[c.name] for c in candidates],
            done,
            elapsed,
            plan,
            still_timed=still,
        )

    with torch.inference_mode():
        result = interleave([p.name for p in timed_ones], warm, call, judge, plan)
    # a participant that left early keeps only the rounds it was timed in together
    kept = tuple(_with_rounds(p, list(result.samples.get(p.name, ()))) for p in everyone)
    return RoundsOutcome(kept, result.rounds, result.reason, result.seconds)


def time_paired(
    participants: Sequence[tuple[str, Callable[..., Any], int]],
    samples: Samples,
    device: torch.device,
    plan: RoundsPlan,
    judge: Judge,
    settings: ProfileSettings = ProfileSettings(),
    *,
    clock: Callable[[], float] = time.monotonic,
    warmup_share: float = 0.25,
    warmup_of: float | None = None,
) -> Timed:
    """Time ``(name, runner, batch size)`` participants in interleaved rounds (the
    verification's timing): each is primed once and warmed to steady state under the
    settings' warm-up rule (a fixed 10 calls without one), its time cap cut so that the
    warm-ups together take at most ``warmup_share`` of ``warmup_of`` seconds (default
    ``plan.max_seconds``; the runners were warmed by their sweeps already; a busy
    machine's windows rarely agree, and the cap is then what ends a warm-up), then
    :func:`interleave` times them until ``judge(samples, rounds_done, elapsed,
    still_timed)`` stops; warm-up counts in the elapsed time. A participant that raises
    leaves (its samples stay a prefix).
    """
    timer = call_timer(device, settings)
    before = parallel_op(device) if settings.input_mode == "parallel_op" else None
    by_name = {name: (runner, bs) for name, runner, bs in participants}
    calls: dict[str, list[Callable[[], Any]]] = {}
    call = burst_caller(calls, timer, plan.burst, before)
    rule = settings.warmup if settings.warmup is not None else fixed_warmup(10)
    of = plan.max_seconds if warmup_of is None else warmup_of
    cap = warmup_share * of / max(len(participants), 1)
    rule = replace(rule, max_seconds=min(rule.max_seconds, cap), min_seconds=0.0)

    def warm(name: str) -> bool:
        runner, bs = by_name[name]
        p = Participant(name, runner, Profile(name, {bs: [1.0]}), bs)
        try:
            calls[name] = _calls(p, samples, device, settings)
            calls[name][0]()  # priming: absorbs a recompilation for this shape
            synchronize(device)
            warm_up(calls[name], rule, timer, clock, before)
        except Exception as error:  # a failing backend stays out of the verification
            log.warning("%s failed before the verification: %s", name, error)
            return False
        return True

    with torch.inference_mode():
        return interleave(list(by_name), warm, call, judge, plan, clock=clock)
