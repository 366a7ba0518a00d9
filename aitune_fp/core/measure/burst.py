"""Bursts: what one participant's turn in an interleaved round is, and the sample it gives.

Why: runtimes keep warm state between calls that another runtime's calls take away. A
backend's thread pool parks, its caches are evicted, its allocator is trimmed while the
other backends of a round run. Measured on the demo CNN at batch size 1 on 2 cores, an ONNX
Runtime session runs 0.16 ms per call alone. Its first call after 20 AOTInductor calls takes
1.1 ms, and it needs about 10 calls to settle. Timed one call per round against
AOTInductor, its median is 0.28 ms. AOTInductor settles in about 2 calls. Such one-call
rounds measure the contention between runtimes that never run together once one of them is
deployed, and they handicap the runtime that needs more calls to settle.

Rules (a :class:`Burst` is a value; :func:`more` and :func:`sample` are pure):
- in a round, each participant runs a *burst*: consecutive calls until it has made at least
  ``min_calls`` and spent at least ``min_ms`` ms, or made ``max_calls``
  (:func:`more` says whether to call again);
- the first ``settle_share`` of the burst's calls (at least one when the burst has two or
  more) only settle it. The round's sample is the median of the rest: the participant's
  steady latency in that round;
- ``Burst()`` (``min_ms=0``, ``min_calls=1``) is one call per round, whose sample is that
  call (the rounds as they were before bursts).

>>> b = Burst(min_ms=1.0, min_calls=2)
>>> more(b, 1, 5.0), more(b, 2, 0.5), more(b, 2, 1.0)
(True, True, False)
>>> sample(b, (3.0, 1.0, 1.5, 1.0))
1.25
>>> sample(Burst(), (2.5,))
2.5
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Burst:
    """How long one participant's turn in a round lasts, and how much of it settles."""

    min_ms: float = 0.0
    min_calls: int = 1
    max_calls: int = 10_000
    settle_share: float = 0.5

    def __post_init__(self) -> None:
        if not (math.isfinite(self.min_ms) and self.min_ms >= 0.0):
            raise ValueError(f"min_ms must be a finite number >= 0, got {self.min_ms!r}")
        if not 1 <= self.min_calls <= self.max_calls:
            raise ValueError(
                "need 1 <= min_calls <= max_calls, got "
                f"min_calls={self.min_calls}, max_calls={self.max_calls}"
            )
        if not 0.0 <= self.settle_share < 1.0:
            raise ValueError(f"settle_share must be in [0, 1), got {self.settle_share!r}")


STEADY = Burst(min_ms=10.0, min_calls=3)
"""The bursts of the final rounds and the verification: at least 10 ms and 3 calls each.

At 10 ms, the demo models' batch-size-1 calls (0.1 to 1 ms) get 10 to 100 calls a burst.
The settling half then covers ONNX Runtime's ~10 calls after a switch, and a 9 ms call
still gets 3.
"""


def more(burst: Burst, calls_done: int, elapsed_ms: float) -> bool:
    """Whether the burst makes another call after ``calls_done`` calls in ``elapsed_ms``.

    >>> more(Burst(), 0, 0.0), more(Burst(), 1, 0.0)
    (True, False)
    >>> more(Burst(min_ms=5.0, max_calls=3), 3, 1.0)
    False
    """
    if calls_done >= burst.max_calls:
        return False
    return calls_done < burst.min_calls or elapsed_ms < burst.min_ms


def settling(burst: Burst, calls: int) -> int:
    """How many of a burst's first ``calls`` calls only settle it (never all of them).

    >>> [settling(Burst(), n) for n in (1, 2, 3, 10)]
    [0, 1, 1, 5]
    >>> settling(Burst(settle_share=0.0), 10)
    0
    """
    if calls <= 1:
        return 0
    wanted = math.floor(burst.settle_share * calls)
    return min(calls - 1, max(wanted, 1 if burst.settle_share > 0.0 else 0))


def sample(burst: Burst, times_ms: Sequence[float]) -> float:
    """The round's sample from a burst's per-call times: the median after the settling calls.

    >>> sample(Burst(), (4.0, 1.0))
    1.0
    """
    if not times_ms:
        raise ValueError("a burst needs at least one timed call")
    return float(statistics.median(times_ms[settling(burst, len(times_ms)) :]))
