"""A stepper run with its own intra-op thread count.

Rules: each prefill and decode call sets torch's intra-op threads (OpenMP, which AOTInductor
kernels use too) to ``threads`` and restores the caller's count afterwards, so the setting
never leaks into the user's process. On a shared machine with few cores, one thread can beat
two: OpenMP's fork/join around many small kernels waits on cores other processes hold (the
tune measures both and keeps what wins).
"""

from __future__ import annotations

import torch

from aitune_fp.effects.generation.loop import Stepper


class ThreadedStepper:
    """``inner`` with every call under ``torch.set_num_threads(threads)``."""

    def __init__(self, inner: Stepper, threads: int) -> None:
        if threads < 1:
            raise ValueError(f"threads must be at least 1, got {threads}")
        self.inner, self.threads = inner, threads

    def prefill(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None, max_len: int
    ) -> torch.Tensor:
        """The inner prefill under this thread count."""
        before = torch.get_num_threads()
        torch.set_num_threads(self.threads)
        try:
            return self.inner.prefill(input_ids, attention_mask, max_len)
        finally:
            torch.set_num_threads(before)

    def decode(self, tokens: torch.Tensor) -> torch.Tensor:
        """The inner decode step under this thread count."""
        before = torch.get_num_threads()
        torch.set_num_threads(self.threads)
        try:
            return self.inner.decode(tokens)
        finally:
            torch.set_num_threads(before)
