"""The verification's records: paired samples, comparisons, and the verification (pure).

The rules that fill them are :mod:`aitune_fp.core.verification.judge`'s; the run record
stores a :class:`Verification` (by :mod:`aitune_fp.core.record.json_codec`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from pyrsistent import pmap


@dataclass(frozen=True, slots=True)
class Paired:
    """One participant's verification samples: ms per call, sample ``i`` timed in round ``i``.

    ``label`` names it in ``samples_ms`` when the backend takes part at more than one batch
    size (``"onnxruntime@64"``); its :attr:`key` is the label, else the backend.
    """

    backend: str
    batch_size: int
    samples_ms: tuple[float, ...]
    label: str = ""

    @property
    def key(self) -> str:
        """The participant's name in the verification's ``samples_ms``."""
        return self.label or self.backend


@dataclass(frozen=True, slots=True)
class Comparison:
    """The winner against one challenger: its speedup, the 95 % interval, and the verdict.

    ``speedup`` > 1: the winner is faster; ``overturns``: the challenger is faster beyond
    the margin with 95 % confidence; ``verdict`` the interval's verdict for the winner
    (:func:`~aitune_fp.core.stats.evidence.verdict`: ``win``, ``loss``, ``equivalent`` or
    ``undecided``; empty in older records).
    """

    challenger: str
    batch_size: int
    speedup: float
    ci95: tuple[float, float]
    overturns: bool
    verdict: str = ""


@dataclass(frozen=True, slots=True)
class Verification:
    """Whether the pick held when re-measured; the record's top-level ``verification``.

    ``winner`` is the pick that was verified (the original selection), ``selected`` the
    pick after verification (``winner`` when ``holds``); ``challenger``, ``speedup`` and
    ``ci95`` are the deciding comparison (see the module's rules); ``selected_batch_size``
    the batch size of the pick after verification (0 at construction: the winner's when it
    holds, else the challenger's); ``seconds`` the wall
    time the verification took, ``rounds`` its paired rounds; ``comparisons`` every
    challenger's; ``reason`` the one line the run prints; ``samples_ms`` every
    participant's paired samples as judged (ms per call, aligned by round), by backend, so
    a reader can recompute each interval; ``outcome`` how the verified pick stands
    (``clear``, ``settled``, ``leaning``, ``undecided`` or ``too few rounds``: see
    :func:`~aitune_fp.core.verification.judge.outcome_of`; empty in older records);
    ``standing`` the verified pick's comparisons with every other participant when it
    moved (``comparisons`` are the original winner's), else empty.
    """

    holds: bool
    winner: str
    challenger: str
    speedup: float
    ci95: tuple[float, float]
    seconds: float
    winner_batch_size: int = 1
    challenger_batch_size: int = 1
    rounds: int = 0
    selected: str = ""
    metric: str = "latency"
    comparisons: tuple[Comparison, ...] = ()
    reason: str = ""
    samples_ms: Mapping[str, tuple[float, ...]] = field(default_factory=pmap)
    selected_batch_size: int = 0
    outcome: str = ""
    standing: tuple[Comparison, ...] = ()

    def __post_init__(self) -> None:
        frozen = pmap({k: tuple(map(float, v)) for k, v in self.samples_ms.items()})
        object.__setattr__(self, "samples_ms", frozen)
        low, high = self.ci95
        if not (0.0 < low <= high < math.inf):
            raise ValueError(f"ci95 must be 0 < low <= high < inf, got {self.ci95!r}")
        if not (math.isfinite(self.seconds) and self.seconds >= 0.0):
            raise ValueError(f"seconds must be a finite number >= 0, got {self.seconds!r}")
        if not self.selected:
            object.__setattr__(self, "selected", self.winner)
        if self.selected_batch_size == 0:
            size = self.winner_batch_size if self.holds else self.challenger_batch_size
            object.__setattr__(self, "selected_batch_size", size)
        pick = (self.selected, self.selected_batch_size)
        if self.holds != (pick == (self.winner, self.winner_batch_size)):
            raise ValueError(
                f"holds={self.holds} but selected={self.selected!r} at batch size "
                f"{self.selected_batch_size}, winner={self.winner!r} at batch size "
                f"{self.winner_batch_size}"
            )


Found = tuple[Comparison, ...]


def costs(p: Paired, kind: str) -> tuple[float, ...]:
    """Per-round cost: ms per call (latency) or ms per sample (throughput).

    >>> costs(Paired("a", 4, (2.0, 4.0)), "throughput"), costs(Paired("a", 4, (2.0,)), "latency")
    ((0.5, 1.0), (2.0,))
    """
    if kind == "latency":
        return p.samples_ms
    return tuple(ms / p.batch_size for ms in p.samples_ms)
