"""The dedicated CUDA stream a runner enqueues on, and how it joins the caller's stream.

Rules:
- each CUDA device gets one dedicated (non-default) stream per process, created on that
  device the first time a runner asks for it; TensorRT engines and ONNX Runtime's CUDA and
  TensorRT providers run on it instead of the legacy default stream, which TensorRT
  documents as needing extra synchronisation;
- a call first makes the dedicated stream wait for the caller's current stream (so the
  inputs it produced are ready), enqueues its work there, then makes the caller's stream
  wait for the dedicated one; so whoever times or reads the outputs on the current stream
  (CUDA events, ``torch.cuda.synchronize``) sees the work finished, and memory freed on
  the current stream afterwards cannot be reused before the work ends;
- no host synchronisation is added: ordering is by stream waits only;
- a runtime that uses the *current* CUDA device (TensorRT deserialising and enqueuing an
  engine, Torch-TensorRT's runtime modules) is entered under ``torch.cuda.device(index)``
  of the tuned device (:func:`on_device`), so ``cuda:N`` works when another device is
  current.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import Any, TypeVar

import torch

R = TypeVar("R")


def device_index(device: torch.device) -> int:
    """The CUDA device's index (the current device when ``device`` names none)."""
    return device.index if device.index is not None else torch.cuda.current_device()


@functools.cache
def _stream_of(index: int) -> torch.cuda.Stream:
    with torch.cuda.device(index):
        return torch.cuda.Stream(index)  # type: ignore[no-untyped-call]


def dedicated_stream(device: torch.device) -> torch.cuda.Stream:
    """The process's dedicated stream on CUDA ``device`` (the same object every time)."""
    return _stream_of(device_index(device))


def enter(stream: torch.cuda.Stream, device: torch.device) -> torch.cuda.Stream:
    """Make ``stream`` wait for the caller's current stream on ``device``; return the latter."""
    caller = torch.cuda.current_stream(device)
    stream.wait_stream(caller)
    return caller


def leave(caller: torch.cuda.Stream, stream: torch.cuda.Stream) -> None:
    """Make the caller's stream wait for the work just enqueued on ``stream``."""
    caller.wait_stream(stream)


def on_device(fn: Callable[..., R], device: torch.device) -> Callable[..., R]:
    """``fn`` called with CUDA ``device`` current (restored afterwards); ``fn`` itself for
    any other device type."""
    if device.type != "cuda":
        return fn
    index = device_index(device)

    def run(*args: Any, **kwargs: Any) -> R:
        with torch.cuda.device(index):
            return fn(*args, **kwargs)

    return run


def device_context(device: torch.device) -> contextlib.AbstractContextManager[Any]:
    """``torch.cuda.device(index)`` of a CUDA ``device``; a no-op context for any other."""
    if device.type != "cuda":
        return contextlib.nullcontext()
    return torch.cuda.device(device_index(device))
