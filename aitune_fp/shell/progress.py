"""Progress events: what long work reports while it runs, as plain values.

Rules: the shell emits one :class:`ProgressEvent` per step (plan, backend start, stage,
batch size profiled, backend done, selected) to a ``ProgressSink``; a sink never changes
what is tuned, and a sink that raises is the caller's bug (the shell does not catch it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

KINDS = frozenset({"plan", "backend_start", "stage", "batch_size", "backend_done", "selected"})


@dataclass(frozen=True, slots=True)
class ProgressEvent:
    """One step of a tuning run.

    ``done``/``total`` count backends (baseline included); ``batch_size`` is set for
    ``batch_size`` events; ``message`` is a human line (metric, failure reason, …).
    """

    kind: str
    backend: str = ""
    stage: str = ""
    batch_size: int | None = None
    done: int = 0
    total: int = 0
    message: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {sorted(KINDS)}, got {self.kind!r}")


ProgressSink = Callable[[ProgressEvent], None]


def silent(_: ProgressEvent) -> None:
    """A sink that ignores every event.

    >>> silent(ProgressEvent("stage", backend="onnxruntime", stage="build")) is None
    True
    >>> silent(ProgressEvent("started"))  # an event names one of the kinds
    Traceback (most recent call last):
    ...
    ValueError: kind must be one of ['backend_done', 'backend_start', 'batch_size', 'plan', \
'selected', 'stage'], got 'started'
    """
