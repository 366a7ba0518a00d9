"""Time named runners in the session's final rounds: the effect behind ``TimeRounds``.

Rules: each participant is the runner of a backend at the batch size its sweep
selected, fed from a rotating pool of at most ``ROUNDS_POOL`` batches; it is primed with
one call and ``plan.warmup_calls`` untimed calls (a participant that raises there stays
out), then :func:`~aitune_fp.effects.rounds.interleave` times bursts of calls in
rotating rounds until the session's judge stops (a pure function of the samples so
far); every call runs under the open call deadline. Nothing here raises for a backend's
failure: it simply has fewer samples, or none.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

import torch

from aitune_fp.core.measure.rounds_plan import RoundsPlan
from aitune_fp.effects.call_guard import guarded
from aitune_fp.effects.inputs import Samples
from aitune_fp.effects.interleave import Judge, Timed, burst_caller, interleave
from aitune_fp.effects.machine import synchronize
from aitune_fp.effects.rounds import ROUNDS_POOL
from aitune_fp.effects.timing import ProfileSettings, call_timer, call_with, input_pool, parallel_op

log = logging.getLogger("aitune_fp")

Runner = Callable[..., Any]


def pooled_calls(
    runner: Runner, batch_size: int, samples: Samples, device: torch.device,
    settings: ProfileSettings,
) -> list[Callable[[], Any]]:
    """The participant's calls, one per batch of its input pool, each under the deadline."""
    small = replace(settings, max_pool=min(settings.max_pool, ROUNDS_POOL))
    pool = input_pool(samples, batch_size, device, small)
    return [guarded(partial(call_with, runner, b.args, dict(b.kwargs))) for b in pool]


def time_rounds(
    participants: Sequence[tuple[str, Runner, int]],
    samples: Samples,
    device: torch.device,
    plan: RoundsPlan,
    judge: Judge,
    settings: ProfileSettings = ProfileSettings(),
) -> Timed:
    """Time ``(name, runner, batch size)`` participants in interleaved rounds until
    ``judge`` stops them (see the module's rules)."""
    by_name = {name: (runner, bs) for name, runner, bs in participants}
    timer = call_timer(device, settings)
    before = parallel_op(device) if settings.input_mode == "parallel_op" else None
    calls: dict[str, list[Callable[[], Any]]] = {}
    call = burst_caller(calls, timer, plan.burst, before)

    def warm(name: str) -> bool:
        runner, bs = by_name[name]
        try:
            calls[name] = pooled_calls(runner, bs, samples, device, settings)
            for i in range(plan.warmup_calls + 1):
                calls[name][i % len(calls[name])]()
        except Exception as error:  # a failing backend stays out of the rounds
            log.warning("%s failed before the final rounds: %s", name, error)
            calls[name] = []
        synchronize(device)
        return bool(calls[name])

    with torch.inference_mode():
        return interleave(list(by_name), warm, call, judge, plan)
