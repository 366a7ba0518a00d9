"""How the profiler times one call: its settings, the pre-built input pool, the timer.

Rules (the profiler's, :mod:`aitune_fp.effects.measure.profiler`, for the call itself): inputs are
pre-built before timing, by default as a rotating pool of distinct batches that together
exceed the CPU's last-level cache; each call is timed with ``time.perf_counter_ns`` with the
device synchronised around it, or with CUDA events on the tuned device's current stream;
the timed region does no argument building beyond Python's own call.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from aitune_fp.core.measure.warmup import WarmupRule
from aitune_fp.effects.inputs.samples import Batch, Samples, make_batch
from aitune_fp.effects.machine.facts import free_memory_bytes, last_level_cache_bytes, synchronize

INPUT_MODES = frozenset({"rotating", "same", "parallel_op"})


Timer = Callable[[Callable[[], Any]], float]


Clock = Callable[[], float]


DEFAULT_WARMUP = WarmupRule()


@dataclass(frozen=True, slots=True)
class Clocks:
    """What the profiler reads time with: ``timer`` times one call in ms (``None``: the
    device's own, :func:`call_timer`) and ``clock`` reads seconds for the time limits and
    the warm-up's time cap; tests drive the loop with fakes of both.

    >>> Clocks().timer is None, Clocks().clock is time.monotonic
    (True, True)
    """

    timer: Timer | None = None
    clock: Clock = time.monotonic


@dataclass(frozen=True, slots=True)
class ProfileSettings:
    """How the profiler feeds inputs and reads the clock.

    ``pool_factor`` × LLC is the pool's target size; ``max_pool`` caps the number of
    batches; ``memory_fraction`` caps the pool at that fraction of free memory;
    ``max_seconds_per_batch`` ends a batch size early (after the rule's minimum) when
    exceeded, so one slow backend cannot stall a run. ``warmup`` is the warm-up rule
    (``None``: exactly the call rule's warm-up count, the old fixed warm-up);
    ``remeasure_first`` re-measures the sweep's first batch size after the others;
    ``early_stop`` lets a batch size that is clearly beaten after its probe stop there
    (when the profile is given an :class:`EarlyStop`; ``False``: every batch size runs
    its whole call rule). ``cuda_events``: on CUDA each call is timed with CUDA events on
    the tuned device's current stream, where every runner's work joins back (``False``:
    the wall clock around a device synchronisation, which also counts the host's wait).
    """

    input_mode: str = "rotating"
    pool_factor: float = 2.0
    max_pool: int = 64
    memory_fraction: float = 0.25
    cuda_events: bool = True
    max_seconds_per_batch: float = 60.0
    warmup: WarmupRule | None = DEFAULT_WARMUP
    remeasure_first: bool = True
    early_stop: bool = True

    def __post_init__(self) -> None:
        if self.input_mode not in INPUT_MODES:
            raise ValueError(f"input_mode must be one of {sorted(INPUT_MODES)}")


def is_out_of_memory(error: BaseException) -> bool:
    """Whether ``error`` is an out-of-memory error from torch, CUDA or an allocator.

    >>> is_out_of_memory(RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB"))
    True
    >>> is_out_of_memory(MemoryError()), is_out_of_memory(ValueError("bad shape"))
    (True, False)
    """
    if isinstance(error, torch.OutOfMemoryError | MemoryError):
        return True
    text = str(error).lower()
    return "out of memory" in text or "failed to allocate" in text


def batch_bytes(batch: Batch) -> int:
    """Bytes held by a batch's tensors.

    >>> from aitune_fp.effects.inputs.samples import make_batch, normalise_samples
    >>> batch_bytes(make_batch(normalise_samples([torch.zeros(1, 3)]), 4))  # 4 rows x 3 float32
    48
    """
    return sum(t.numel() * t.element_size() for t in batch.flat())


def input_pool(
    samples: Samples, batch_size: int, device: torch.device, settings: ProfileSettings
) -> tuple[Batch, ...]:
    """Distinct pre-built batches for ``batch_size``, together larger than the LLC.

    >>> from aitune_fp.effects.inputs.samples import normalise_samples
    >>> samples = normalise_samples([torch.zeros(1, 3), torch.ones(1, 3)])
    >>> cpu = torch.device("cpu")
    >>> len(input_pool(samples, 2, cpu, ProfileSettings(input_mode="same")))
    1
    >>> len(input_pool(samples, 2, cpu, ProfileSettings(max_pool=3)))  # tiny batches: the cap
    3
    """
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


def before_each(device: torch.device, settings: ProfileSettings) -> Callable[[], None] | None:
    """What runs untimed before each timed call: the parallel op with
    ``input_mode="parallel_op"``, else nothing (``None``).

    >>> before_each(torch.device("cpu"), ProfileSettings()) is None
    True
    """
    return parallel_op(device) if settings.input_mode == "parallel_op" else None


@dataclass(frozen=True, slots=True)
class TimedCalls:
    """One participant's calls (one per batch of its input pool), timed one at a time
    round the pool by ``timer``; ``before`` runs untimed ahead of each.

    >>> timed = TimedCalls((lambda: 1, lambda: 2), timer=lambda call: float(call()))
    >>> timed.time(0), timed.time(1), timed.time(2)
    (1.0, 2.0, 1.0)
    """

    calls: Sequence[Callable[[], Any]]
    timer: Timer
    before: Callable[[], None] | None = None

    def time(self, index: int) -> float:
        """The ms of call number ``index`` (cycling round the pool)."""
        if self.before is not None:
            self.before()
        return self.timer(self.calls[index % len(self.calls)])


def call_timer(
    device: torch.device, settings: ProfileSettings
) -> Callable[[Callable[[], Any]], float]:
    """A function timing one call in ms, synchronising around it on CUDA.

    >>> timer = call_timer(torch.device("cpu"), ProfileSettings())
    >>> calls = []
    >>> ms = timer(lambda: calls.append(1))
    >>> calls, ms >= 0.0
    ([1], True)
    """
    if device.type == "cuda" and settings.cuda_events:
        return _event_timer(device)

    def time_wall(call: Callable[[], Any]) -> float:
        synchronize(device)
        t0 = time.perf_counter_ns()
        call()
        synchronize(device)
        return (time.perf_counter_ns() - t0) / 1e6

    return time_wall


def _event_timer(device: torch.device) -> Callable[[Callable[[], Any]], float]:
    """A function timing one call in ms with CUDA events on ``device``'s current stream."""
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


def call_with(runner: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``runner(*args, **kwargs)``: bound with ``partial`` before timing, so the timed
    region does no argument building beyond Python's own call.

    >>> call_with(sorted, ([3, 1, 2],), {"reverse": True})
    [3, 2, 1]
    """
    return runner(*args, **kwargs)


def timer_overhead_ns(device: torch.device, calls: int = 20_000) -> float:
    """The profiler's own per-call overhead in ns: timing a no-op the same way."""
    timer = call_timer(device, ProfileSettings())
    total = 0.0
    for _ in range(calls):
        total += timer(lambda: None)
    return total / calls * 1e6
