"""The search space as a value: how wide the candidate set is and which precisions it holds.

Rules:
- ``level`` is ``none`` (today's fp32 candidates only), ``default`` (those plus the
  variants that moved a pick on the demo and BERT-like models: see ``docs/precision.md``)
  or ``wide`` (every variant: opt-in, it costs tune time);
- ``precisions`` narrows the space to candidates of those precisions (``fp32``, ``bf16``,
  ``fp16``, ``int8``); ``None`` keeps every precision of the level;
- user spellings are read by :func:`parse_search` and :func:`parse_precisions`, which
  refuse anything else naming the valid choices.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

LEVELS: Final = ("none", "default", "wide")
PRECISIONS: Final = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16", "int8": "int8"}


@dataclass(frozen=True, slots=True)
class Search:
    """How wide the candidate set is (``level``) and which precisions it keeps.

    >>> Search().admits("bfloat16"), Search(precisions=frozenset({"float32"})).admits("int8")
    (True, False)
    """

    level: str = "default"
    precisions: frozenset[str] | None = None

    def __post_init__(self) -> None:
        if self.level not in LEVELS:
            raise ValueError(f"search must be one of {', '.join(LEVELS)}, got {self.level!r}")
        if self.precisions is not None:
            unknown = sorted(set(self.precisions) - set(PRECISIONS.values()))
            if unknown or not self.precisions:
                raise ValueError(f"precisions must be some of {sorted(PRECISIONS.values())}")

    def admits(self, precision: str) -> bool:
        """Whether a candidate computing in ``precision`` belongs to this space."""
        return self.precisions is None or precision in self.precisions


def parse_precisions(text: str) -> frozenset[str]:
    """``fp32,bf16,int8`` → the precisions they name.

    >>> sorted(parse_precisions("fp32, int8"))
    ['float32', 'int8']
    >>> parse_precisions("fp8")
    Traceback (most recent call last):
    ...
    ValueError: unknown precision 'fp8'; choose from fp32, bf16, fp16, int8
    """
    names = [p.strip().lower() for p in text.split(",") if p.strip()]
    if not names:
        raise ValueError(f"no precision given; choose from {', '.join(PRECISIONS)}")
    for name in names:
        if name not in PRECISIONS:
            raise ValueError(f"unknown precision {name!r}; choose from {', '.join(PRECISIONS)}")
    return frozenset(PRECISIONS[n] for n in names)


def parse_search(level: str, precisions: str | None = None) -> Search:
    """The search a user typed (``--search`` and ``--precision``).

    >>> parse_search("wide", "bf16").precisions
    frozenset({'bfloat16'})
    """
    return Search(level, parse_precisions(precisions) if precisions else None)
