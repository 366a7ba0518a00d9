"""Why the max batch size is what it is: how the eager max-batch search stopped.

Rules:
- ``stop`` is one of :data:`STOPS`: ``cap`` (every batch size up to the cap ran),
  ``raised`` (eager raised), ``crashed`` (eager's worker died: a signal or an exit code),
  ``hung`` (a call outlived the call timeout), ``memory`` (the memory guard), ``slow``
  (one call took too long), ``unbatched`` (the strategy profiles batch size 1 only);
- ``failed_at`` is the batch size that raised, crashed or hung (``None`` otherwise), and
  ``reason`` says it in words ("eager crashed at batch size 4 (SIGSEGV)");
- ``reused_from`` is the cache file an earlier sweep's result was taken from (``None``:
  swept in this run; see :mod:`aitune_fp.shell.batch_cache`);
- it is ``run.json``'s ``max_batch_search`` object (its fields, by :mod:`.json_codec`); a
  record written before it existed reads as ``None`` (nothing known), and
  :func:`max_batch_line` is the one line the console and the report show: ``max batch
  size 2: eager crashed at batch size 4 (SIGSEGV)`` (with ``, reused from an earlier
  sweep`` when it was).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

STOPS: Final = ("cap", "raised", "crashed", "hung", "memory", "slow", "unbatched")


@dataclass(frozen=True, slots=True)
class MaxBatchSearch:
    """How the max-batch search stopped (see the rules).

    >>> MaxBatchSearch("crashed", "eager crashed at batch size 4 (SIGSEGV)", 4).failed_at
    4
    >>> MaxBatchSearch("tired", "x")
    Traceback (most recent call last):
    ...
    ValueError: stop must be one of cap, raised, crashed, hung, memory, slow, unbatched, \
got 'tired'
    """

    stop: str
    reason: str
    failed_at: int | None = None
    reused_from: str | None = None

    def __post_init__(self) -> None:
        if self.stop not in STOPS:
            raise ValueError(f"stop must be one of {', '.join(STOPS)}, got {self.stop!r}")
        if self.failed_at is not None and (isinstance(self.failed_at, bool) or self.failed_at < 1):
            raise ValueError(f"failed_at must be >= 1, got {self.failed_at!r}")


def max_batch_line(max_batch_size: int | None, search: MaxBatchSearch | None) -> str | None:
    """``max batch size N: why`` (``None`` when the size or the reason is not known).

    >>> max_batch_line(2, MaxBatchSearch("crashed", "eager crashed at batch size 4 (SIGSEGV)", 4))
    'max batch size 2: eager crashed at batch size 4 (SIGSEGV)'
    >>> max_batch_line(8, MaxBatchSearch("cap", "reached the cap 8", reused_from="x.json"))
    'max batch size 8: reached the cap 8, reused from an earlier sweep'
    >>> max_batch_line(8, None) is None
    True
    """
    if max_batch_size is None or search is None:
        return None
    reused = ", reused from an earlier sweep" if search.reused_from else ""
    return f"max batch size {max_batch_size}: {search.reason}{reused}"
