"""Find the largest batch size worth profiling by sweeping the eager module.

Rules (the reference's, with guards): powers of two from 1 upwards, one call each; the
sweep ends at the first batch size that raises (out of memory or otherwise — earlier
results stand), that exceeds the user's cap, whose inputs would not fit in
``memory_fraction`` of free memory (times ``activation_factor`` for intermediate
tensors), or whose single call takes longer than ``max_call_seconds``. The largest batch
size that ran is returned; if even batch size 1 fails, 1 is returned and profiling will
report the failure. The result says why the search stopped (``stop``: ``cap``,
``raised``, ``memory``, ``slow``; an isolated search adds ``crashed`` and ``hung``, see
:mod:`aitune_fp.effects.isolation.isolated`), the batch size that failed and, in words,
the reason. ``on_try`` hears each batch size just before its call (the isolation
worker's heartbeat), and :func:`size_before` names the batch size tried before a given
one, so a search cut short at batch size ``s`` keeps the one before it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from aitune_fp.effects.inputs.samples import Samples, batch_at
from aitune_fp.effects.machine.facts import free_memory_bytes, synchronize

log = logging.getLogger("aitune_fp")

DEFAULT_CAP = {"cpu": 64, "cuda": 4096}
UNBATCHED = "the strategy profiles batch size 1 only"


@dataclass(frozen=True, slots=True)
class MaxBatchResult:
    """The largest batch size that ran, why the search stopped (``stop``, ``reason``) and
    the batch size that failed (``failed_at``: ``None`` when none failed)."""

    max_batch_size: int
    reason: str
    stop: str = "cap"
    failed_at: int | None = None


def size_before(batch_size: int) -> int:
    """The batch size the sweep tries just before ``batch_size`` (0 before the first).

    The sweep tries powers of two, then the cap: before ``s`` it tried the largest power of
    two below ``s``.

    >>> size_before(1), size_before(2), size_before(8), size_before(6)
    (0, 1, 4, 4)
    """
    return 0 if batch_size <= 1 else 2 ** ((batch_size - 1).bit_length() - 1)


def find_max_batch_size(
    runner: Callable[..., Any],
    samples: Samples,
    device: torch.device,
    *,
    cap: int | None = None,
    memory_fraction: float = 0.5,
    activation_factor: float = 8.0,
    max_call_seconds: float = 2.0,
    on_try: Callable[[int], None] = lambda _: None,
) -> MaxBatchResult:
    """Sweep powers of two up to ``cap`` (device default when ``None``) and keep the last ok."""
    limit = cap if cap is not None else DEFAULT_CAP.get(device.type, 64)
    if limit < 1:
        raise ValueError(f"max batch size cap must be >= 1, got {limit}")
    row_bytes = max(samples.spec.bytes_per_row(), 1)
    best, bs = 0, 1
    reason, stop, failed_at = f"reached the cap {limit}", "cap", None
    while bs <= limit:
        need = bs * row_bytes * activation_factor
        if best and need > memory_fraction * free_memory_bytes(device):
            reason = f"memory guard: batch size {bs} would need ~{need / 2**20:.0f} MiB"
            stop = "memory"
            break
        try:
            batch = batch_at(samples, bs, samples.spec.sizes("max")).to(device)
            on_try(bs)
            with torch.inference_mode():
                synchronize(device)
                t0 = time.perf_counter()
                batch.call(runner)
                synchronize(device)
                seconds = time.perf_counter() - t0
        except Exception as error:  # the reference: a batch size that raises ends the sweep
            first = (str(error).strip().splitlines() or [""])[0][:120]
            reason = f"eager raised {type(error).__name__} at batch size {bs}: {first}"
            stop, failed_at = "raised", bs
            break
        best = bs
        if seconds > max_call_seconds:
            reason = f"batch size {bs} took {seconds:.2f} s > {max_call_seconds:g} s"
            stop = "slow"
            break
        if bs == limit:
            break
        bs = min(bs * 2, limit)
    result = MaxBatchResult(max(best, 1), reason, stop, failed_at)
    log.info("max batch size %d (%s)", result.max_batch_size, result.reason)
    return result
