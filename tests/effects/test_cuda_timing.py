"""CUDA timing belongs to the tuned device: checked on CPU with fakes of torch.cuda's API.

The fakes mirror torch 2.13: ``torch.cuda.device(d)`` as a context that makes ``d``
current, ``torch.cuda.Event(enable_timing=True)`` created on the current device,
``Event.record(stream)``, ``Event.synchronize()``, ``Event.elapsed_time(other)`` and
``torch.cuda.current_stream(device)``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
import torch

from aitune_fp.effects.measure.timing import ProfileSettings, call_timer

TUNED = torch.device("cuda", 1)


class _Cuda:
    """Which device is current, and what every event did."""

    def __init__(self) -> None:
        self.current = 0
        self.events: list[_Event] = []


def _install(monkeypatch: pytest.MonkeyPatch) -> _Cuda:
    state = _Cuda()

    @contextlib.contextmanager
    def device(d: torch.device) -> Iterator[None]:
        saved, state.current = state.current, d.index
        try:
            yield
        finally:
            state.current = saved

    class Event(_Event):
        def __init__(self, enable_timing: bool = False) -> None:
            super().__init__(state.current)
            state.events.append(self)

    monkeypatch.setattr(torch.cuda, "device", device)
    monkeypatch.setattr(torch.cuda, "Event", Event)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda d=None: f"stream of {d}")
    return state


class _Event:
    def __init__(self, device_index: int) -> None:
        self.device_index = device_index
        self.recorded_on: list[Any] = []

    def record(self, stream: Any = None) -> None:
        self.recorded_on.append(stream)

    def synchronize(self) -> None:
        pass

    def elapsed_time(self, other: Any) -> float:
        return 1.5


def test_events_are_created_and_recorded_on_the_tuned_device(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With cuda:0 current and cuda:1 tuned, both events live on cuda:1 and are recorded on
    cuda:1's current stream; the current device is left as it was."""
    state = _install(monkeypatch)
    timer = call_timer(TUNED, ProfileSettings(cuda_events=True))
    assert timer(lambda: None) == 1.5
    assert [e.device_index for e in state.events] == [1, 1]
    assert all(e.recorded_on == [f"stream of {TUNED}"] for e in state.events)
    assert state.current == 0


def test_the_tuners_default_settings_time_cuda_with_events(monkeypatch: pytest.MonkeyPatch) -> None:
    """``ProfileSettings()`` as the tuner builds it times CUDA calls with events on the tuned
    device's stream (issue 37 §10: the default used to be the synchronised wall clock)."""
    state = _install(monkeypatch)
    timer = call_timer(TUNED, ProfileSettings())
    assert timer(lambda: None) == 1.5
    assert [e.device_index for e in state.events] == [1, 1]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_on_cuda_event_timing_sees_the_work_of_a_real_matmul() -> None:
    """The default CUDA timer times the kernels, not their launch: a 4096x4096 matmul (8×
    the work of a 2048x2048 one) takes over 4× as long (a timer that sees only the launch,
    the same few microseconds for both, fails), and it leaves the current device as it was."""
    device = torch.device("cuda", torch.cuda.device_count() - 1)
    small = torch.randn(2048, 2048, device=device)
    large = torch.randn(4096, 4096, device=device)
    timer = call_timer(device, ProfileSettings())
    before = torch.cuda.current_device()
    for a in (small, large, small, large):  # warm: cuBLAS handles and heuristics
        timer(lambda a=a: a @ a)
    ms = {
        n: min(timer(lambda a=a: a @ a) for _ in range(5)) for n, a in (("s", small), ("l", large))
    }
    assert ms["l"] > 4 * ms["s"] > 0
    assert torch.cuda.current_device() == before
