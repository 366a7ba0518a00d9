"""The pick's decode limit on a CPU, in the run record and said once.

Rules: only a tune on a CPU model gets the limit (a GPU's bandwidth is not read); the bytes
one decode step reads are the pick's own weights (an OpenVINO step's compressed weights
when its stepper says so, else the fp32 module it runs); the limit is
:class:`~aitune_fp.core.generation.decode_bound.DecodeBound` over the measured memory
bandwidth at the pick's batch; one progress line says it, and the record's options carry
its figures under ``decode_bound``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import torch
from pyrsistent import freeze

from aitune_fp.core.generation.decode_bound import DecodeBound
from aitune_fp.core.generation.records import GenerationResult
from aitune_fp.core.record.run_record import RunRecord
from aitune_fp.effects.generation import devices
from aitune_fp.effects.machine.bandwidth import read_bandwidth, weight_bytes
from aitune_fp.shell.generation.candidates import Steppers, named


def with_decode_bound(
    record: RunRecord,
    model: torch.nn.Module,
    pick: GenerationResult,
    steppers: Steppers,
    progress: Callable[[str], None],
) -> RunRecord:
    """On a CPU, ``record`` with ``pick``'s decode limit (one progress line says it)."""
    if devices.model_device(model).type != "cpu":
        return record
    plan = named(pick.name)  # the pick's stepper, built when the tune released it: the
    runs = steppers.get(plan) if plan is not None else None  # generator runs it anyway
    read = getattr(runs, "weight_bytes", None)  # a runtime step's weights file
    read = float(read) if read is not None else weight_bytes(getattr(runs, "model", model))
    bound = DecodeBound(read_bandwidth(), read, pick.batch)
    progress(bound.line(pick.name, pick.itl_ms))
    facts = {
        "bandwidth_bytes_per_s": bound.bandwidth,
        "weight_bytes": bound.weight_bytes,
        "batch": bound.batch,
        "tokens_per_s": bound.tokens_per_s,
        "pick_share": bound.share(pick.itl_ms),
    }
    return replace(record, options=record.options.set("decode_bound", freeze(facts)))
