"""A candidate's stage seconds in ``run.json``: the pinned names, ``null`` where a part did
not run.

Rules: :func:`encode_stages` writes every name of :data:`STAGES` (``None`` for a part that
did not run) then any other stage, sorted; :func:`without_null_stages` drops the ``null``
ones before decoding, so the in-memory map holds only the parts that ran and a round trip
is the identity.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from aitune_fp.core.record.values import encode_float

STAGES: Final = (
    "build",
    "validate",
    "profile",
    "export",
    "compile",
    "cache",
    "worker_start",
    "rounds",
)
"""The pinned stage names every candidate's ``stage_seconds`` carries in ``run.json``
(``null`` where a part did not run): ``build``, ``validate`` and ``profile`` are the
candidate's stages; ``export`` (``torch.export``), ``compile`` (what follows the export:
AOTInductor's compile and package, the ONNX translation and session) and ``cache`` (the
artifact cache's lookup and store) are parts of ``build``; ``worker_start`` is the
isolation worker's start; ``rounds`` is the candidate's share of the final rounds."""


def encode_stages(stages: Mapping[str, float]) -> dict[str, Any]:
    """Every pinned stage of :data:`STAGES` (``None`` where it did not run), then any other.

    >>> encode_stages({"build": 1.5, "extra": 2.0})["build"], encode_stages({})["export"]
    (1.5, None)
    >>> list(encode_stages({"extra": 2.0}))[-1]
    'extra'
    """
    pinned = {k: encode_float(stages[k]) if k in stages else None for k in STAGES}
    return pinned | {k: encode_float(v) for k, v in sorted(stages.items()) if k not in pinned}


def without_null_stages(outcome: Any) -> Any:
    """An outcome's JSON without the stages that did not run (``null``); anything else as is.

    >>> without_null_stages({"stage_seconds": {"build": 1.0, "export": None}})
    {'stage_seconds': {'build': 1.0}}
    """
    if not isinstance(outcome, dict) or not isinstance(outcome.get("stage_seconds"), dict):
        return outcome
    ran = {k: v for k, v in outcome["stage_seconds"].items() if v is not None}
    return {**outcome, "stage_seconds": ran}
