"""Bursts: what one participant's turn in an interleaved round is, and the sample it gives.

Why: runtimes keep warm state between calls that another runtime's calls take away, and
some leave the machine busy after their call returns. Measured on the demo models on 2
cores:
- an ONNX Runtime session runs the CNN at batch size 1 in 0.16 ms per call alone, but its
  first call after 20 AOTInductor calls takes 1.1 ms and it needs about 10 calls to
  settle; timed one call per round against AOTInductor its median is 0.28 ms;
- ONNX Runtime's worker threads keep spinning for tens of ms after a call returns. The
  transformer's AOTInductor call at batch size 32 takes 4.2 ms alone, but 37 ms right after
  ONNX Runtime calls, and 8, 6 and 5.5 ms for the next three calls. After 30 ms of idle
  time its first call costs what it costs after any idle time (9 to 13 ms), and the second
  is back to 4.6 ms.
Timing one call per round therefore measures contention between runtimes that never run
together once one of them is deployed. It handicaps whoever runs after a spinning runtime
or needs calls to settle.

Rules (a :class:`Burst` is a value; :func:`settles` and :func:`times` are pure):
- before its burst a participant's machine *rests* ``rest_ms`` (idle: the previous
  participant's threads park), the effect layer sleeps it;
- the burst first *settles*: untimed-in-effect calls until it made ``settle_calls`` and
  spent ``settle_ms`` (:func:`settles` says whether to make another);
- then it *times*: calls until it made ``min_calls`` and spent ``min_ms``, or made
  ``max_calls`` (:func:`times`); the round's sample is the median of these calls
  (:func:`sample`): the participant's steady latency in that round;
- ``Burst()`` is one timed call per round, no rest, no settling: the rounds as they were
  before bursts.

>>> b = Burst(settle_calls=2, min_ms=1.0, min_calls=2)
>>> settles(b, 1, 9.0), settles(b, 2, 0.0), times(b, 2, 0.5), times(b, 2, 1.0)
(True, False, True, False)
>>> sample(b, (1.0, 1.5, 1.2))
1.2
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Burst:
    """One participant's turn in a round: rest, settle, then timed calls."""

    min_ms: float = 0.0
    min_calls: int = 1
    max_calls: int = 10_000
    settle_calls: int = 0
    settle_ms: float = 0.0
    rest_ms: float = 0.0

    def __post_init__(self) -> None:
        for name in ("min_ms", "settle_ms", "rest_ms"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0.0):
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        if not 1 <= self.min_calls <= self.max_calls:
            raise ValueError(
                "need 1 <= min_calls <= max_calls, got "
                f"min_calls={self.min_calls}, max_calls={self.max_calls}"
            )
        if not 0 <= self.settle_calls <= self.max_calls:
            raise ValueError(
                f"need 0 <= settle_calls <= max_calls, got settle_calls={self.settle_calls}"
            )


STEADY = Burst(min_ms=10.0, min_calls=3, settle_calls=3, settle_ms=10.0, rest_ms=20.0)
"""The bursts of the final rounds and the verification.

Each participant rests 20 ms, settles for at least 3 calls and 10 ms, then is timed for at
least 3 calls and 10 ms. The demo models' batch-size-1 calls (0.03 to 1 ms) get 10 to 300
timed calls a burst. A 9 ms call gets 3. The rest lets a spinning runtime's threads park.
The settling calls absorb the first calls after idle time (1 or 2 calls at 2 to 3 times
the steady latency) and ONNX Runtime's ~10 calls after a switch.
"""


def settles(burst: Burst, calls_done: int, elapsed_ms: float) -> bool:
    """Whether the burst makes another settling call after ``calls_done`` in ``elapsed_ms``.

    >>> settles(Burst(), 0, 0.0), settles(Burst(settle_ms=5.0, settle_calls=1), 1, 4.0)
    (False, True)
    """
    if calls_done >= burst.max_calls:
        return False
    return calls_done < burst.settle_calls or elapsed_ms < burst.settle_ms


def times(burst: Burst, calls_done: int, elapsed_ms: float) -> bool:
    """Whether the burst makes another timed call after ``calls_done`` in ``elapsed_ms``.

    >>> times(Burst(), 0, 0.0), times(Burst(), 1, 0.0)
    (True, False)
    >>> times(Burst(min_ms=5.0, max_calls=3), 3, 1.0)
    False
    """
    if calls_done >= burst.max_calls:
        return False
    return calls_done < burst.min_calls or elapsed_ms < burst.min_ms


def sample(burst: Burst, timed_ms: Sequence[float]) -> float:
    """The round's sample: the median of the burst's timed calls.

    >>> sample(Burst(), (2.5,))
    2.5
    """
    if not timed_ms:
        raise ValueError("a burst needs at least one timed call")
    return float(statistics.median(timed_ms))
