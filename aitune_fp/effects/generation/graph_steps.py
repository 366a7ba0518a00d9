"""A decode step captured in a CUDA graph over static input buffers, replayed every token.

Rules (PyTorch's manual capture recipe, ``torch.cuda.CUDAGraph`` / ``torch.cuda.graph``;
Hugging Face's static cache reads no tensor value on the host while a stream captures,
``transformers.utils.import_utils.is_tracing``):
- a graph is captured once per static cache (the cache's keys, values and each layer's
  ``cumulative_length`` keep their addresses for the cache's life) and batch shape: the
  step's tokens, mask, positions and ``cache_position`` are copied into static buffers the
  graph was captured over, and its output (the next-token logits) is read after the replay,
  cloned (the next replay overwrites it);
- before capture the step runs ``WARMUPS`` times on a side stream (the CUDA docs' recipe:
  lazy initialisation, cuBLAS workspaces and the allocator settle outside the capture);
  each warm-up writes this step's keys and values at this step's position (the replay
  writes the same) and adds to the layers' lengths, so the lengths are rewound to the
  step's start before each warm-up and before the capture;
- a new cache (another batch or capacity bucket) drops the old graph before the new one is
  captured (its private memory pool is freed first);
- it runs only on a CUDA device: on another device it is refused by name before anything is
  captured (:func:`cuda_refusal`), unless a caller passes its own ``cuda`` namespace (a
  test's fake of ``torch.cuda``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

Step = Callable[..., torch.Tensor]
WARMUPS = 3


def cuda_refusal(device: torch.device) -> str | None:
    """Why a CUDA-graph step cannot run on ``device``, or None.

    >>> cuda_refusal(torch.device("cpu"))
    'a CUDA-graph decode step needs a CUDA device; the model is on cpu'
    >>> cuda_refusal(torch.device("cuda", 0)) is None
    True
    """
    if device.type == "cuda":
        return None
    return f"a CUDA-graph decode step needs a CUDA device; the model is on {device}"


@dataclass(frozen=True, slots=True)
class _Captured:
    """One captured graph: its static inputs, the cache it writes, and its output."""

    graph: Any
    inputs: tuple[torch.Tensor, ...]
    cache: Any
    output: torch.Tensor

    def serves(self, args: tuple[torch.Tensor, ...], cache: Any) -> bool:
        """True when ``args`` fit the static inputs and ``cache`` is the captured one."""
        same = all(a.shape == s.shape for a, s in zip(args, self.inputs, strict=True))
        return cache is self.cache and same

    def run(self, args: tuple[torch.Tensor, ...]) -> torch.Tensor:
        """Copy ``args`` into the static inputs, replay, return the logits."""
        for static, new in zip(self.inputs, args, strict=True):
            static.copy_(new)
        self.graph.replay()
        return self.output.clone()


def _starts(cache: Any) -> list[torch.Tensor]:
    return [layer.cumulative_length.clone() for layer in cache.layers]


def _rewind(cache: Any, starts: list[torch.Tensor]) -> None:
    for layer, start in zip(cache.layers, starts, strict=True):
        layer.cumulative_length.copy_(start)


class GraphStep:
    """``step`` (tokens, mask, positions, cache_position, cache) run as a CUDA graph (see
    the module rules); ``cuda`` is ``torch.cuda`` unless a test passes a fake of it."""

    def __init__(self, step: Step, cuda: Any = None) -> None:
        self.step = step
        self.cuda: Any = cuda if cuda is not None else torch.cuda
        self.captures = 0
        self._captured: _Captured | None = None

    def __call__(self, *args: Any) -> torch.Tensor:
        """The next-token logits of one decode step (captured first when needed)."""
        *tensors, cache = args
        inputs = tuple(tensors)
        if self._captured is None or not self._captured.serves(inputs, cache):
            self._captured = None  # the old graph's pool is freed before the new capture
            self._captured = self._capture(inputs, cache)
        return self._captured.run(inputs)

    def _capture(self, args: tuple[torch.Tensor, ...], cache: Any) -> _Captured:
        cuda, device = self.cuda, args[0].device
        static = tuple(a.clone() for a in args)
        starts = _starts(cache)
        side = cuda.Stream(device=device)
        side.wait_stream(cuda.current_stream(device))
        with cuda.stream(side):
            for _ in range(WARMUPS):
                _rewind(cache, starts)
                self.step(*static, cache)
        cuda.current_stream(device).wait_stream(side)
        graph = cuda.CUDAGraph()
        _rewind(cache, starts)
        with cuda.graph(graph):
            output = self.step(*static, cache)
        self.captures += 1
        return _Captured(graph, static, cache, output)
