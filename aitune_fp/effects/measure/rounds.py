"""Interleaved final rounds: the timing loop, and its adapter for backends on a device.

Rules (the pure decisions live in :mod:`aitune_fp.core.rounds.round_members`):
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
  (:mod:`aitune_fp.effects.measure.call_guard`), so a hang ends as such a failure;
- on a device a participant's turn in a round is a burst (:func:`timed_burst`, the plan's
  ``burst``): a rest, settling calls, then timed calls whose median is the round's
  sample, so each backend is timed at the steady state it has when it runs alone, not
  right after another runtime took its threads and caches or left its threads spinning;
- :func:`time_rounds` times backends' runners on a device with it (the session's
  ``TimeRounds``; :func:`run_rounds` is the same for participants with their sweep
  profiles, judged by the session's rounds judge): every participant at
  the batch size its sweep selected, with inputs from the same kind of rotating pool as
  the profiler (at most 8 batches: between two calls of one backend the others run,
  which already evicts its inputs from the caches), after one priming call and
  ``plan.warmup_calls`` untimed calls; the benchmark's simulated machine drives the same
  loop with a call-count clock.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from aitune_fp.core.measure.warmup import WarmupRule, fixed_warmup
from aitune_fp.core.records import Profile
from aitune_fp.core.rounds.rounds_plan import RoundsPlan
from aitune_fp.core.session.judges import Judging, RoundsJudge, with_rounds
from aitune_fp.core.strategy import Strategy
from aitune_fp.effects.inputs.samples import Samples
from aitune_fp.effects.machine.facts import synchronize
from aitune_fp.effects.measure.batch_timing import warm_up
from aitune_fp.effects.measure.call_guard import guarded
from aitune_fp.effects.measure.interleave import Interleaved, burst_caller, interleave
from aitune_fp.effects.measure.timing import (
    Clock,
    ProfileSettings,
    TimedCalls,
    Timer,
    before_each,
    call_timer,
    input_pool,
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
WARMUP_SHARE = 0.25
"""The share of the verification's seconds its warm-ups may take together."""

Entrant = tuple[str, Callable[..., Any], int]
"""A participant of :func:`time_rounds` and :func:`time_paired`: name, runner, batch size."""


def pooled_calls(
    runner: Callable[..., Any],
    batch_size: int,
    samples: Samples,
    device: torch.device,
    settings: ProfileSettings,
) -> list[Callable[[], Any]]:
    """The participant's calls, one per batch of its input pool, each under the deadline."""
    small = replace(settings, max_pool=min(settings.max_pool, ROUNDS_POOL))
    pool = input_pool(samples, batch_size, device, small)
    return [guarded(b.bound(runner)) for b in pool]


@dataclass(frozen=True, slots=True)
class _Field:
    """The participants of interleaved rounds on a device: their runners and batch sizes
    by name, where their inputs come from, how a call is timed (``before``: what runs
    untimed ahead of it), and the pooled calls each warm-up fills in for the bursts."""

    entrants: dict[str, tuple[Callable[..., Any], int]]
    samples: Samples
    device: torch.device
    settings: ProfileSettings
    timer: Timer
    before: Callable[[], None] | None
    calls: dict[str, list[Callable[[], Any]]] = field(default_factory=dict)

    def pool(self, name: str) -> TimedCalls:
        """The participant's pooled calls, built now and kept for its bursts."""
        runner, bs = self.entrants[name]
        self.calls[name] = pooled_calls(runner, bs, self.samples, self.device, self.settings)
        return TimedCalls(self.calls[name], self.timer, self.before)

    def rounds(
        self,
        warm: Callable[[str], bool],
        judge: Judging,
        plan: RoundsPlan,
        clock: Clock = time.monotonic,
    ) -> Interleaved:
        """:func:`interleave` of the participants, each turn one burst (see the rules)."""
        call = burst_caller(self.calls, self.timer, plan.burst, self.before)
        with torch.inference_mode():
            return interleave(list(self.entrants), warm, call, judge, plan, clock=clock)


def _field(
    participants: Sequence[Entrant], samples: Samples, device: torch.device, s: ProfileSettings
) -> _Field:
    """The rounds' field of ``(name, runner, batch size)`` participants."""
    entrants = {name: (runner, bs) for name, runner, bs in participants}
    return _Field(entrants, samples, device, s, call_timer(device, s), before_each(device, s))


def time_rounds(
    participants: Sequence[Entrant],
    samples: Samples,
    device: torch.device,
    plan: RoundsPlan,
    judge: Judging,
    settings: ProfileSettings = ProfileSettings(),
) -> Interleaved:
    """Time ``(name, runner, batch size)`` participants in the final rounds until ``judge``
    stops them: each primed with one call and ``plan.warmup_calls`` untimed calls (one
    that raises there stays out), then bursts in rotating rounds (the session's
    ``TimeRounds``; see the module's rules)."""
    field = _field(participants, samples, device, settings)

    def warm(name: str) -> bool:
        try:
            calls = field.pool(name).calls
            for i in range(plan.warmup_calls + 1):
                calls[i % len(calls)]()
        except Exception as error:  # a failing backend stays out of the rounds
            log.warning("%s failed before the final rounds: %s", name, error)
            field.calls[name] = []
        synchronize(device)
        return bool(field.calls[name])

    return field.rounds(warm, judge, plan)


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
    """Time ``baseline`` and ``candidates`` (participants with their sweep profiles, each
    profile named as its participant) in interleaved rounds, judged by the session's
    rounds judge (:class:`~aitune_fp.core.session.judges.RoundsJudge`).

    With ``time_baseline=False`` the baseline is judged on its sweep samples only and
    never called here.
    """
    everyone = (*((baseline,) if baseline else ()), *candidates)
    timed_ones = [
        (p.name, p.runner, p.batch_size) for p in everyone if time_baseline or p is not baseline
    ]
    swept = tuple((p.profile, p.batch_size) for p in everyone)
    judge = RoundsJudge(strategy, swept, baseline is not None, plan)
    result = time_rounds(timed_ones, samples, device, plan, judge, settings)
    # a participant that left early keeps only the rounds it was timed in together
    kept = tuple(
        with_rounds(p.profile, p.batch_size, result.samples.get(p.name, ())) for p in everyone
    )
    return RoundsOutcome(kept, result.rounds, result.reason, result.seconds)


def time_paired(
    participants: Sequence[Entrant],
    samples: Samples,
    device: torch.device,
    plan: RoundsPlan,
    judge: Judging,
    settings: ProfileSettings = ProfileSettings(),
    *,
    clock: Clock = time.monotonic,
    warmup_of: float | None = None,
) -> Interleaved:
    """Time ``(name, runner, batch size)`` participants in interleaved rounds (the
    verification's timing): each is primed once and warmed to steady state under
    :func:`paired_warmup`'s rule, then :func:`interleave` times them until
    ``judge(samples, rounds_done, elapsed, still_timed)`` stops; warm-up counts in the
    elapsed time. A participant that raises leaves (its samples stay a prefix).
    """
    field = _field(participants, samples, device, settings)
    rule = paired_warmup(settings, plan, warmup_of, len(participants))

    def warm(name: str) -> bool:
        try:
            timed = field.pool(name)
            timed.calls[0]()  # priming: absorbs a recompilation for this shape
            synchronize(device)
            warm_up(timed, rule, clock)
        except Exception as error:  # a failing backend stays out of the verification
            log.warning("%s failed before the verification: %s", name, error)
            return False
        return True

    return field.rounds(warm, judge, plan, clock)


def paired_warmup(
    settings: ProfileSettings, plan: RoundsPlan, warmup_of: float | None, participants: int
) -> WarmupRule:
    """The verification's warm-up rule: the settings' rule (a fixed 10 calls without one),
    its time cap cut so that the ``participants``' warm-ups together take at most
    :data:`WARMUP_SHARE` of ``warmup_of`` seconds (default ``plan.max_seconds``; the
    runners were warmed by their sweeps already; a busy machine's windows rarely agree,
    and the cap is then what ends a warm-up), with no minimum time.

    >>> rule = paired_warmup(ProfileSettings(warmup=None), RoundsPlan(max_seconds=8.0), None, 2)
    >>> rule.min_calls, rule.max_seconds, rule.min_seconds
    (10, 1.0, 0.0)
    """
    rule = settings.warmup if settings.warmup is not None else fixed_warmup(10)
    of = plan.max_seconds if warmup_of is None else warmup_of
    cap = WARMUP_SHARE * of / max(participants, 1)
    return replace(rule, max_seconds=min(rule.max_seconds, cap), min_seconds=0.0)
