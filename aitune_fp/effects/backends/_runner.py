"""Small wrappers shared by runners.

Rule: a torch-based runner computes under ``torch.inference_mode()`` whoever calls it, so a
JIT backend compiled at build time meets the same grad-mode guards at every call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


def in_inference_mode(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` wrapped so that each call runs under ``torch.inference_mode()``.

    >>> run = in_inference_mode(lambda x: torch.is_inference_mode_enabled())
    >>> run(None)
    True
    """
    is_enabled = torch.is_inference_mode_enabled

    def run(*args: Any, **kwargs: Any) -> Any:
        if is_enabled():  # already inside (the profiler's case): skip the context's cost
            return fn(*args, **kwargs)
        with torch.inference_mode():
            return fn(*args, **kwargs)

    return run


def prepared(module: torch.nn.Module, device: torch.device) -> torch.nn.Module:
    """``module`` on ``device`` in eval mode (both in place, as ``nn.Module`` does)."""
    return module.to(device).eval()
