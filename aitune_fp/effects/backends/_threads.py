"""Torch's intra-op thread count as a runtime option of a torch runner.

Rules:
- ``threads`` 0 leaves the process's count (``torch.get_num_threads()``) alone: the runner
  is returned unchanged;
- otherwise every call runs at ``torch.set_num_threads(threads)`` and the count it found
  is restored afterwards, whatever the call does, so a candidate's setting never leaks
  into eager's baseline or another candidate timed in the same process;
- the count is process-wide, so a runner is not meant to be called from two threads at
  once (the profiler calls one runner at a time).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


def with_torch_threads(fn: Callable[..., Any], threads: int) -> Callable[..., Any]:
    """``fn`` run at ``threads`` torch intra-op threads (see the rules).

    >>> before = torch.get_num_threads()
    >>> with_torch_threads(lambda: torch.get_num_threads(), 1)(), torch.get_num_threads() == before
    (1, True)
    """
    if threads == 0:
        return fn
    get, set_ = torch.get_num_threads, torch.set_num_threads

    def run(*args: Any, **kwargs: Any) -> Any:
        found = get()
        set_(threads)
        try:
            return fn(*args, **kwargs)
        finally:
            set_(found)

    return run
