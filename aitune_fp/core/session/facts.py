"""What one build learnt besides its profile: the facts the run record keeps of it (pure).

Rules: a :class:`BuildFacts` travels in the build's
:class:`~aitune_fp.core.session.events.Profiled` event, so the record is derived from
the session alone (:func:`~aitune_fp.core.record.derive.record_of`): the config as data
(``kind``: the backend's kind, ``key``: its config's key, ``config``: its fields, as
:func:`~aitune_fp.shell.recording.config_dict` writes them), the seconds of each stage it
ran (``build``, ``validate``, ``profile``…), its validation figures, and its artifact
(the path and, when it is a file, its sha256); peak memory, where measured, is the
profile's (``Profile.peak_memory_mb``). Every map is frozen canonically
(:func:`~aitune_fp.core.record.values.freeze_json`), so a decoded event equals the one
encoded; an event logged before facts travelled reads as the empty facts.

>>> f = BuildFacts("onnxruntime", "ab12", {"threads": [1, 2]}, {"build": 1})
>>> f.config["threads"], f.stage_seconds["build"], BuildFacts() == BuildFacts()
((1, 2), 1.0, True)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyrsistent import PMap, pmap

from aitune_fp.core.record.values import freeze_json, freeze_numbers


@dataclass(frozen=True, slots=True)
class BuildFacts:
    """One build's config as data, stage seconds, validation figures and artifact."""

    kind: str = ""
    key: str = ""
    config: PMap[str, Any] = field(default_factory=pmap)
    stage_seconds: PMap[str, float] = field(default_factory=pmap)
    validation: PMap[str, float] = field(default_factory=pmap)
    artifact: str | None = None
    artifact_sha256: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "config", freeze_json(dict(self.config)))
        object.__setattr__(self, "stage_seconds", freeze_numbers(self.stage_seconds))
        object.__setattr__(self, "validation", freeze_numbers(self.validation))
