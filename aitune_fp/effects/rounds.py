"""Interleaved final rounds: the baseline and the leading candidates timed again, side by side.

Rules (the pure decisions live in :mod:`aitune_fp.core.measure.rounds`):
- every participant is timed at the batch size its sweep selected, with inputs from the
  same kind of rotating pool as the profiler (at most 8 batches: between two calls of one
  backend the others run, which already evicts its inputs from the caches), after one
  priming call and ``plan.warmup_calls`` untimed calls;
- a round times each participant once, in the order of :func:`rotation` (A B C, B C A, …),
  so drift and noisy neighbours hit every participant alike and pair up by round;
- after a round the core judge says whether the decision is clear, who stays, or that
  the round or time budget is spent; the reason is returned with the round samples; the
  judge (a few bootstraps) is skipped while the rounds timed since its last verdict took
  less time than that verdict did, so judging never costs more than the rounds themselves;
  the time budgets (``plan.max_seconds``, and the sweep share) count the measuring, the
  priming and round calls, not the judging, so the rounds a budget buys do not shrink
  when judging is slow (pure Python, on a micro model);
- a participant whose call raises leaves the rounds (its samples stay a prefix); nothing
  here raises for a backend's failure;
- :func:`final_rounds` wires this to the fold: the members come from
  :func:`aitune_fp.core.measure.rounds.round_members` (the contenders of the fold's state, and the
  baseline unless the sweeps already settle every contender against it; no rounds at all
  when fewer than two would be timed, and the reason is noted), and the same fold is
  re-run over the same candidates with the round samples attached, so the stored run
  re-selects offline to the same answer. A baseline that is not timed is still judged,
  on its sweep samples.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import torch
from returns.result import Result, Success

from aitune_fp.core.fold import TuneState, fold_all
from aitune_fp.core.measure.rounds import judge_rounds, round_members
from aitune_fp.core.measure.rounds_plan import RoundsPlan, rotation
from aitune_fp.core.records import BackendFailure, Profile
from aitune_fp.core.strategy import Strategy
from aitune_fp.effects.inputs import Samples
from aitune_fp.effects.machine import synchronize
from aitune_fp.effects.profiler import (
    ProfileSettings,
    call_timer,
    call_with,
    input_pool,
    parallel_op,
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
    return [partial(call_with, p.runner, b.args, dict(b.kwargs)) for b in pool]


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
    began = time.monotonic()
    timer = call_timer(device, settings)
    before = parallel_op(device) if settings.input_mode == "parallel_op" else None
    timed: dict[str, list[float]] = {p.name: [] for p in everyone}
    with torch.inference_mode():
        calls = {p.name: _warmed(p, samples, device, settings, plan) for p in timed_ones}
        active = tuple(p.name for p in timed_ones if calls[p.name])
        synchronize(device)
        done, reason = 0, "no rounds were run"
        judge_cost, since_judged, judging = 0.0, 0.0, 0.0
        while len(active) >= 2:
            failed = []
            round_began = time.monotonic()
            for name in rotation(active, done):
                if before is not None:
                    before()
                try:
                    timed[name].append(timer(calls[name][done % len(calls[name])]))
                except Exception as error:  # a failing backend leaves the rounds
                    log.warning("%s failed during the final rounds: %s", name, error)
                    failed.append(name)
            done += 1
            now = time.monotonic()
            # the budget counts measuring (priming and round calls), not judging
            elapsed, since_judged = now - began - judging, since_judged + now - round_began
            budget_spent = done >= plan.max_rounds or elapsed >= plan.max_seconds
            if not (failed or budget_spent) and since_judged < judge_cost:
                continue  # judging costs more than the rounds since the last judgement
            profiles = {p.name: _with_rounds(p, timed[p.name]) for p in everyone}
            verdict = judge_rounds(
                strategy,
                profiles[baseline.name] if baseline else None,
                [profiles[c.name] for c in candidates],
                done,
                elapsed,
                plan,
                still_timed=tuple(n for n in active if n not in failed),
            )
            active = tuple(n for n in verdict.active if n not in failed)
            spent = time.monotonic() - now
            judging += spent
            if plan.judges(done, elapsed):
                judge_cost, since_judged = spent, 0.0
            if verdict.stop:
                reason = verdict.reason
                break
        else:
            reason = f"after {done} rounds fewer than two participants were left"
    # a participant that left early keeps only the rounds it was timed in together
    kept = tuple(_with_rounds(p, timed[p.name]) for p in everyone)
    return RoundsOutcome(kept, done, reason, time.monotonic() - began)


def final_rounds(
    strategy: Strategy,
    state: TuneState,
    baseline: Profile | None,
    fed: Sequence[Result[Profile, BackendFailure]],
    runners: Mapping[str, Callable[..., Any]],
    samples: Samples,
    device: torch.device,
    settings: ProfileSettings = ProfileSettings(),
    *,
    sweep_seconds: float | None = None,
) -> tuple[TuneState, RoundsOutcome | None]:
    """Run the strategy's final rounds after the sweeps and re-fold with their samples.

    ``state`` is the fold's state after ``baseline`` and every candidate in ``fed`` (in
    order); ``runners`` maps the backends still alive to their runners. Without a rounds
    plan and a confidence rule, or with fewer than two live participants, ``state`` is
    returned as is; when the sweeps already settle the decision, ``state`` gets a note
    saying so. Otherwise the new state comes from the same fold over the same
    baseline and candidates, in the same order, the participants' profiles now carrying
    their round samples; its notes say how the rounds ended. ``sweep_seconds``, the wall
    time the sweeps took, caps the rounds' time at ``plan.sweep_share`` times it.
    """
    plan = strategy.plan.rounds
    if plan is None or strategy.confidence is None or state.best is None:
        return state, None
    plan = plan.within(sweep_seconds)
    members = round_members(strategy, state, plan)
    by_name = {p.backend: p for p in (r.value_or(None) for r in fed) if p is not None}
    chosen = [
        Participant(n, runners[n], by_name[n], _batch_size(state, n))
        for n in members.candidates
        if n in runners and n in by_name
    ]
    base = None
    if baseline is not None and state.baseline is not None and baseline.backend in runners:
        bs = state.baseline.result.selected_batch_size
        base = Participant(baseline.backend, runners[baseline.backend], baseline, bs)
    timed_base = base is not None and members.baseline
    if len(chosen) + int(timed_base) < 2:
        if members.reason:
            note = f"no final rounds: {members.reason}"
            log.info("%s", note)
            return replace(state, notes=(*state.notes, note)), None
        return state, None
    names = [*((base.name,) if base is not None and timed_base else ()), *(p.name for p in chosen)]
    log.info("final rounds: %s", ", ".join(names))
    if members.reason:
        log.info("%s", members.reason)
    outcome = run_rounds(
        strategy, base, chosen, samples, device, plan, settings, time_baseline=timed_base
    )
    log.info("final rounds: %s (%.1f s)", outcome.reason, outcome.seconds)
    replaced = {p.backend: p for p in outcome.profiles}
    new_base = None if baseline is None else replaced.get(baseline.backend, baseline)
    refolded = fold_all(
        strategy,
        (result.map(lambda p: replaced.get(p.backend, p)) for result in fed),
        Success(new_base) if new_base is not None else None,
    )
    note = f"final rounds ({outcome.rounds} rounds, {outcome.seconds:.1f} s): {outcome.reason}"
    if members.reason:
        note = f"{note}; {members.reason}"
    return replace(refolded, notes=(*refolded.notes, note)), outcome


def _batch_size(state: TuneState, name: str) -> int:
    return next(s.result.selected_batch_size for s in state.ranking if s.backend == name)
