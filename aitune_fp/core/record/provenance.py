"""Where a run's baseline came from, and what a later run must match to reuse it.

Rules:
- ``baseline_keys`` names each thing a baseline profile depends on (``model``: the code
  and weights digest, ``inputs``, ``batch_sizes``, ``profiling``, ``settings``,
  ``environment``, ``device``, ``isolation``) with a text value; two runs may share a
  baseline only when every key is present in both and equal (:func:`differing`);
- ``baseline_reused_from`` is the run record the baseline profile was taken from
  (``None``: it was measured in this run); ``baseline_refused`` is the one line saying why
  a reuse that was asked for was refused (``None``: none was asked, or it was reused);
- ``decision`` says how this run reached its decision: ``"full tune"``, a decision cache
  hit whose pick was re-verified, or a full tune after a re-verification that disagreed
  (:mod:`aitune_fp.shell.decision_cache`; ``None``: written before the decision cache);
- all are fields of ``run.json``'s ``provenance`` object (by :mod:`.json_codec`); a record
  written before they existed reads as no keys, not reused and no decision line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from pyrsistent import PMap, pmap

CACHE_HIT: Final = "decision cache hit"
"""How a decision cache hit's ``decision`` line begins (the producer:
:func:`aitune_fp.core.record.decisions.cached_line`)."""


@dataclass(frozen=True, slots=True)
class Provenance:
    """The baseline's keys and the record it was reused from (if it was)."""

    baseline_keys: PMap[str, str] = field(default_factory=pmap)
    baseline_reused_from: str | None = None
    baseline_refused: str | None = None
    decision: str | None = None

    def __post_init__(self) -> None:
        keys = {str(k): str(v) for k, v in dict(self.baseline_keys).items()}
        object.__setattr__(self, "baseline_keys", pmap(keys))

    @property
    def cache_hit(self) -> bool:
        """Whether the run was a decision cache hit (its decision line says so).

        >>> Provenance(decision="full tune").cache_hit, Provenance().cache_hit
        (False, False)
        """
        return (self.decision or "").startswith(CACHE_HIT)


def differing(ours: Mapping[str, str], theirs: Mapping[str, str]) -> tuple[str, ...]:
    """The keys whose values differ or are missing on either side, sorted.

    >>> differing({"model": "a", "device": "cpu"}, {"model": "b", "device": "cpu"})
    ('model',)
    >>> differing({"model": "a"}, {})
    ('model',)
    >>> differing({}, {})
    ()
    """
    return tuple(sorted(k for k in {*ours, *theirs} if ours.get(k) != theirs.get(k)))
