"""A worker's calls with a heartbeat before each (:class:`~.heartbeat.Heartbeat`): the
profiler's timer (the beat before its clock starts, nothing inside the timed region
changes), a runner's untimed calls (each allowed the build's limit: a validation call may
compile) and the eager module validation compares with (each under the call timeout)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from aitune_fp.effects.isolation.heartbeat import Heartbeat
from aitune_fp.effects.measure.profiler import Timer


def beating_timer(timer: Timer, beat: Heartbeat) -> Timer:
    """``timer`` with a heartbeat just before its clock starts (nothing inside the timed
    region changes)."""

    def timed(call: Callable[[], Any]) -> float:
        beat.tick(may_compile=False)
        return timer(call)

    return timed


def beating(runner: Callable[..., Any], beat: Heartbeat) -> Callable[..., Any]:
    """``runner`` with a heartbeat before each call (used only where nothing is timed), each
    allowed the build's limit (a validation call may compile)."""

    def run(*args: Any, **kwargs: Any) -> Any:
        beat.tick(may_compile=True)
        return runner(*args, **kwargs)

    return run


class BeatingEager(torch.nn.Module):
    """The eager module with a heartbeat before each call, each under the call timeout (an
    eager call compiles nothing): validation's eager references are guarded as the sweep's
    calls are."""

    def __init__(self, module: torch.nn.Module, beat: Heartbeat) -> None:
        super().__init__()
        self.inner = module
        self.beat = beat

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Beat, then the eager module's call."""
        self.beat.tick(may_compile=False)
        return self.inner(*args, **kwargs)
