"""A generator save's record as a value: the pick, why, every candidate's result, the wall.

Rules: :class:`GeneratorRecord` is what ``TunedGenerator.save`` writes as ``generation.json``
through the strict codec (:mod:`aitune_fp.core.record.json_codec`) and what ``load`` decodes
(a value of the wrong type is refused naming its path); ``pick`` names a candidate among
``results`` (checked at construction); ``fresh`` holds the figures of a re-measure in a fresh
process (``tune-generate --remeasure``; empty when there was none); ``verified`` holds the
pick's figures as the tune's verification measured them (``None``: no verification, or a
save written before one was kept), and is then the choice's result.

>>> r = GenerationResult("hf", "e", "e", 1, 8, 4, 20.0, 8.0)
>>> record = GeneratorRecord("hf", "kept", True, (r,), 1.5)
>>> from_json(to_json(record), GeneratorRecord, "generation.json") == record
True
>>> GeneratorRecord("nope", "kept", True, (r,), 1.5)
Traceback (most recent call last):
...
ValueError: the pick 'nope' is not among the results
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from pyrsistent import PMap, pmap

from aitune_fp.core.generation.choose import GenerationPick
from aitune_fp.core.generation.records import GenerationResult
from aitune_fp.core.record.json_codec import from_json, to_json

KIND: Final = "aitune_fp.generator"

__all__ = ["KIND", "GeneratorRecord", "from_json", "to_json"]


@dataclass(frozen=True, slots=True)
class GeneratorRecord:
    """The saved pick (see the module rules)."""

    pick: str
    reason: str
    fell_back: bool
    results: tuple[GenerationResult, ...]
    tune_wall_s: float
    fresh: PMap[str, float] = field(default_factory=pmap)
    kind: str = KIND
    verified: GenerationResult | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "results", tuple(self.results))
        object.__setattr__(self, "fresh", pmap({str(k): float(v) for k, v in self.fresh.items()}))
        if self.pick not in {r.name for r in self.results}:
            raise ValueError(f"the pick {self.pick!r} is not among the results")

    @property
    def choice(self) -> GenerationPick:
        """The pick's result (its verified figures, else the first result of its name: the
        primary point) and reason."""
        first = next(r for r in self.results if r.name == self.pick)
        chosen = self.verified if self.verified is not None else first
        return GenerationPick(chosen, self.reason, self.fell_back)
