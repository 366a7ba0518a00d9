"""A generation profile: a candidate's TTFT and inter-token latency by batch and prompt length.

Rules: a :class:`GenerationPoint` is one (batch, prompt length) measurement of ``new_tokens``
greedy tokens: its time to first token (``ttft_ms``, finite and > 0) and its inter-token
latency (``itl_ms``, finite and >= 0; 0 when one token was generated); a
:class:`GenerationProfile` holds at least one point, the first being the primary point a
strategy judges, and names the backend of each phase. A :class:`~aitune_fp.core.records.Profile`
carries one in its ``generation`` field, every point's batch among the profile's measured
batch sizes (:func:`check_points`), so a generation candidate is folded as any other.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass


def tokens_per_second(batch: int, new_tokens: int, ttft_ms: float, itl_ms: float) -> float:
    """Tokens a user receives per second: ``batch * new_tokens`` over TTFT plus the
    remaining ``new_tokens - 1`` inter-token steps.

    >>> tokens_per_second(1, 3, 10.0, 5.0)
    150.0
    """
    total_ms = ttft_ms + max(new_tokens - 1, 0) * itl_ms
    return batch * new_tokens * 1000.0 / total_ms if total_ms > 0 else 0.0


def _positive_int(name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")


@dataclass(frozen=True, slots=True)
class GenerationPoint:
    """TTFT and inter-token latency (ms) of ``new_tokens`` tokens at one batch and prompt length.

    >>> GenerationPoint(2, 8, 3, 10.0, 5.0).tokens_per_s
    300.0
    >>> GenerationPoint(1, 8, 3, 0.0, 5.0)
    Traceback (most recent call last):
    ...
    ValueError: ttft_ms must be finite and > 0, got 0.0
    """

    batch: int
    prompt_len: int
    new_tokens: int
    ttft_ms: float
    itl_ms: float

    def __post_init__(self) -> None:
        for name in ("batch", "prompt_len", "new_tokens"):
            _positive_int(name, getattr(self, name))
        if not math.isfinite(self.ttft_ms) or self.ttft_ms <= 0:
            raise ValueError(f"ttft_ms must be finite and > 0, got {self.ttft_ms!r}")
        if not math.isfinite(self.itl_ms) or self.itl_ms < 0:
            raise ValueError(f"itl_ms must be finite and >= 0, got {self.itl_ms!r}")

    @property
    def tokens_per_s(self) -> float:
        """Tokens per second as a user receives them (see :func:`tokens_per_second`)."""
        return tokens_per_second(self.batch, self.new_tokens, self.ttft_ms, self.itl_ms)

    @property
    def total_ms(self) -> float:
        """The whole run: TTFT plus ``new_tokens - 1`` inter-token steps."""
        return self.ttft_ms + (self.new_tokens - 1) * self.itl_ms


@dataclass(frozen=True, slots=True)
class GenerationProfile:
    """A candidate's generation points (the first is primary) and each phase's backend.

    >>> GenerationProfile((GenerationPoint(1, 8, 3, 10.0, 5.0),)).primary.prompt_len
    8
    >>> GenerationProfile(())
    Traceback (most recent call last):
    ...
    ValueError: a GenerationProfile needs at least one point, got none
    """

    points: tuple[GenerationPoint, ...]
    prefill: str = ""
    decode: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "points", tuple(self.points))
        if not self.points:
            raise ValueError("a GenerationProfile needs at least one point, got none")

    @property
    def primary(self) -> GenerationPoint:
        """The point strategies judge: the first batch size with the first prompt."""
        return self.points[0]


def check_points(generation: GenerationProfile | None, batch_sizes: Collection[int]) -> None:
    """Refuse a generation profile with a point at a batch size the profile did not measure.

    >>> check_points(GenerationProfile((GenerationPoint(4, 8, 3, 10.0, 5.0),)), {1})
    Traceback (most recent call last):
    ...
    ValueError: generation point at batch 4 is not among the measured batch sizes [1]
    """
    if generation is None:
        return
    for point in generation.points:
        if point.batch not in batch_sizes:
            raise ValueError(
                f"generation point at batch {point.batch} is not among the measured batch "
                f"sizes {sorted(batch_sizes)}"
            )
