"""The profiler: times a built runner over a batch-size sweep, driven by the core's stop rules.

Rules:
- inputs are pre-built before timing: by default a rotating pool of distinct batches
  (built from all the user's samples) that together exceed the CPU's last-level cache, so
  no call finds its inputs hot in cache and nothing is copied or allocated in, or right
  before, the timed region (``input_mode="rotating"``); ``"same"`` reuses one batch;
  ``"parallel_op"`` runs a parallel torch op before each (untimed) call, as in-process
  preprocessing would;
- each call is timed with ``time.perf_counter_ns``; on CUDA the device is synchronised
  before and after the call, or CUDA events are used (``cuda_events=True``), created on
  the tuned device and recorded on its current stream;
- every new batch size first gets one untimed priming call, then the call rule's warm-up,
  so a JIT backend's recompilation never lands in the timed samples;
- the call rule decides when a batch size is done, the sweep rule when the sweep is done;
  every timed sample is kept in the returned :class:`~aitune_fp.core.records.Profile`;
- an out-of-memory error or an exception at a batch size after the first ends the sweep
  with the earlier results kept (the reason is recorded); at the first batch size it is a
  ``BackendFailure`` at stage ``profile``.
"""

from __future__ import annotations

import math
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import Any

import torch
from returns.io import IOFailure, IOResult, IOSuccess

from aitune_fp.core.measure.stop_rules import CallRule, SweepPoint, SweepRule, sweep_point
from aitune_fp.core.records import BackendFailure, Profile
from aitune_fp.effects.inputs import Batch, Samples, make_batch
from aitune_fp.effects.machine import free_memory_bytes, last_level_cache_bytes, synchronize

INPUT_MODES = frozenset({"rotating", "same", "parallel_op"})


@dataclass(frozen=True, slots=True)
class ProfileSettings:
    """How the profiler feeds inputs and reads the clock.

    ``pool_factor`` × LLC is the pool's target size; ``max_pool`` caps the number of
    batches; ``memory_fraction`` caps the pool at that fraction of free memory;
    ``max_seconds_per_batch`` ends a batch size early (after the rule's minimum) when
    exceeded, so one slow backend cannot stall a run.
    """

    input_mode: str = "rotating"
    pool_factor: float = 2.0
    max_pool: int = 64
    memory_fraction: float = 0.25
    cuda_events: bool = False
    max_seconds_per_batch: float = 60.0

    def __post_init__(self) -> None:
        if self.input_mode not in INPUT_MODES:
            raise ValueError(f"input_mode must be one of {sorted(INPUT_MODES)}")


@dataclass(frozen=True, slots=True)
class BatchReport:
    """What happened at one batch size: samples, why it stopped, calls made."""

    batch_size: int
    samples: tuple[float, ...]
    reason: str
    calls: int


def is_out_of_memory(error: BaseException) -> bool:
    """Whether ``error`` is an out-of-memory error from torch, CUDA or an allocator."""
    if isinstance(error, torch.OutOfMemoryError | MemoryError):
        return True
    text = str(error).lower()
    return "out of memory" in text or "failed to allocate" in text


def batch_bytes(batch: Batch) -> int:
    """Bytes held by a batch's tensors."""
    return sum(t.numel() * t.element_size() for t in batch.flat())


def input_pool(
    samples: Samples, batch_size: int, device: torch.device, settings: ProfileSettings
) -> tuple[Batch, ...]:
    """Distinct pre-built batches for ``batch_size``, together larger than the LLC."""
    first = make_batch(samples, batch_size).to(device)
    if settings.input_mode == "same":
        return (first,)
    size = max(batch_bytes(first), 1)
    target = settings.pool_factor * last_level_cache_bytes()
    budget = settings.memory_fraction * free_memory_bytes(device)
    count = max(2, min(settings.max_pool, math.ceil(target / size), int(budget // size)))
    offsets = [(i * batch_size) % max(samples.rows, 1) + i for i in range(1, count)]
    return (first, *(make_batch(samples, batch_size, offset=o).to(device) for o in offsets))


def parallel_op(device: torch.device) -> Callable[[], None]:
    """A parallel torch op as in-process preprocessing would run (wakes torch's threads)."""
    a = torch.randn(512, 512, device=device)
    out = torch.empty_like(a)

    def run() -> None:
        torch.mm(a, a, out=out)

    return run


def call_timer(
    device: torch.device, settings: ProfileSettings
) -> Callable[[Callable[[], Any]], float]:
    """A function timing one call in ms, synchronising around it on CUDA."""
    if device.type == "cuda" and settings.cuda_events:
        with torch.cuda.device(device):  # events belong to the tuned device, not the current
            start = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            end = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
        stream = torch.cuda.current_stream(device)  # runners' own streams join back into it

        def time_events(call: Callable[[], Any]) -> float:
            start.record(stream)
            call()
            end.record(stream)
            end.synchronize()
            return float(start.elapsed_time(end))

        return time_events

    def time_wall(call: Callable[[], Any]) -> float:
        synchronize(device)
        t0 = time.perf_counter_ns()
        call()
        synchronize(device)
        return (time.perf_counter_ns() - t0) / 1e6

    return time_wall


def call_with(runner: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``runner(*args, **kwargs)``: bound with ``partial`` before timing, so the timed
    region does no argument building beyond Python's own call."""
    return runner(*args, **kwargs)


def measure_batch_size(
    runner: Callable[..., Any],
    pool: tuple[Batch, ...],
    rule: CallRule,
    device: torch.device,
    settings: ProfileSettings,
) -> BatchReport:
    """Prime once, then call ``runner`` over the pool until ``rule`` stops; raises on error."""
    timer = call_timer(device, settings)
    before = parallel_op(device) if settings.input_mode == "parallel_op" else None
    calls = [partial(call_with, runner, b.args, dict(b.kwargs)) for b in pool]
    with torch.inference_mode():
        calls[0]()  # priming: absorbs compilation for this shape
        synchronize(device)
        state, i = rule.start(), 0
        deadline = time.monotonic() + settings.max_seconds_per_batch
        while True:
            if before is not None:
                before()
            state, decision = rule.step(state, timer(calls[i % len(calls)]))
            i += 1
            if decision.stop:
                return BatchReport(pool[0].size, state.samples, decision.reason, i + 1)
            if len(state.samples) >= rule.min_samples and time.monotonic() > deadline:
                reason = f"time limit {settings.max_seconds_per_batch:g} s reached"
                return BatchReport(pool[0].size, state.samples, reason, i + 1)


def profile_runner(
    backend: str,
    runner: Callable[..., Any],
    samples: Samples,
    device: torch.device,
    batch_sizes: Iterable[int],
    rule: CallRule,
    sweep: SweepRule,
    settings: ProfileSettings = ProfileSettings(),
    on_batch: Callable[[BatchReport], None] = lambda _: None,
) -> IOResult[Profile, BackendFailure]:
    """Sweep ``batch_sizes`` in order and return every timed sample as a ``Profile``."""
    latencies: dict[int, tuple[float, ...]] = {}
    points: tuple[SweepPoint, ...] = ()
    stop = "plan exhausted"
    for bs in batch_sizes:
        try:
            pool = input_pool(samples, bs, device, settings)
            report = measure_batch_size(runner, pool, rule, device, settings)
        except Exception as error:  # a backend's failure is a value, never a crash
            what = "out of memory" if is_out_of_memory(error) else "error"
            if not latencies:
                detail = "".join(traceback.format_exception_only(error)).strip()
                return IOFailure(
                    BackendFailure(backend, "profile", f"{what} at batch size {bs}: {detail}")
                )
            stop = f"{what} at batch size {bs}: {str(error).splitlines()[0][:200]}"
            break
        latencies[bs] = report.samples
        on_batch(report)
        points, decision = sweep.step(points, sweep_point(bs, report.samples))
        if decision.stop:
            stop = decision.reason
            break
    if not latencies:
        return IOFailure(BackendFailure(backend, "profile", "no batch size to profile"))
    return IOSuccess(Profile(backend, latencies, sweep_stop=stop, input_mode=settings.input_mode))


def timer_overhead_ns(device: torch.device, calls: int = 20_000) -> float:
    """The profiler's own per-call overhead in ns: timing a no-op the same way."""
    timer = call_timer(device, ProfileSettings())
    total = 0.0
    for _ in range(calls):
        total += timer(lambda: None)
    return total / calls * 1e6
