"""The host side of a stepper whose runtime takes numpy arrays (ONNX Runtime, OpenVINO).

Rules: a prefill resets the runtime's cache for ``batch`` rows and ``max_len`` positions
(:meth:`HostSteps._reset`), builds the full-length attention mask (the prompt's mask, then
ones) and the positions (the mask's running count, from 0), and runs the prompt from
position 0; each decode appends one token per row at the next position. The runtime's own
call is :meth:`HostSteps._run` (ids, positions and the start position in the cache), which
returns the next-token logits as a float32 torch tensor.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np
import torch


class HostSteps(ABC):
    """Prefill and decode bookkeeping over numpy arrays (see the module rules); a runtime's
    stepper supplies :meth:`_reset` and :meth:`_run`."""

    _mask: np.ndarray[Any, Any]
    _next_pos: np.ndarray[Any, Any]
    _length: int

    @abstractmethod
    def _reset(self, batch: int, max_len: int) -> None:
        """Zero the runtime's cache for ``batch`` rows and ``max_len`` positions."""

    @abstractmethod
    def _run(self, ids: np.ndarray[Any, Any], positions: np.ndarray[Any, Any], start: int) -> Any:
        """One step from cache position ``start``; the next-token logits (float32 torch)."""

    @torch.inference_mode()
    def prefill(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None, max_len: int
    ) -> torch.Tensor:
        """Run the prompt over a reset cache; the next-token logits (float32, [B, V])."""
        batch, length = input_ids.shape
        mask = attention_mask if attention_mask is not None else torch.ones_like(input_ids)
        self._reset(batch, max_len)
        full = np.ones((batch, max_len), dtype=np.int64)
        full[:, :length] = mask.long().numpy()
        positions = (mask.long().cumsum(-1) - 1).clamp(min=0).numpy()
        self._mask, self._length, self._next_pos = full, length, positions[:, -1:] + 1
        logits: torch.Tensor = self._run(input_ids.long().numpy(), positions, 0)
        return logits

    @torch.inference_mode()
    def decode(self, tokens: torch.Tensor) -> torch.Tensor:
        """Append one token per row ([B, 1]); the next-token logits."""
        position, start = self._next_pos, self._length
        self._length, self._next_pos = start + 1, position + 1
        logits: torch.Tensor = self._run(tokens.long().numpy(), position, start)
        return logits
