"""Which steppers a generation tune holds, and within what memory.

Rules: a stepper that holds its own copy of the weights (the candidate's
``owns_weights``: OpenVINO, an AOTInductor package, a bf16 copy) is kept one at a time:
released after its check and after its timing (:func:`release`), built again from disk
when used (:func:`stepper_of`); a build whose stepper would take the process past the
tune's memory budget is skipped with its reason (:func:`memory_skip`, the rule in
:func:`~aitune_fp.core.generation.build_policy.memory_reason`), the bytes in use read from
``/proc`` (:func:`resident_now`).
"""

from __future__ import annotations

import torch

from aitune_fp.core.generation.build_policy import memory_reason, resident_need
from aitune_fp.effects.generation.loop import Stepper
from aitune_fp.effects.measure.memory import read_status_mb
from aitune_fp.shell.generation.candidates import Candidate, Steppers


def stepper_of(
    steppers: Steppers, cand: Candidate, kept: Stepper | None, budget_s: float
) -> Stepper:
    """The candidate's stepper: ``kept``, or built again from the tune's cache."""
    return kept if kept is not None else steppers.get(cand, budget_s)


def release(steppers: Steppers, cand: Candidate) -> None:
    """Drop ``cand``'s stepper (and its plain twin's) from the cache when it owns its
    weights."""
    if cand.owns_weights:
        steppers.built.pop(cand.name, None)
        steppers.built.pop(cand.name.removesuffix(f"_{cand.threads}thread"), None)


def fp32_bytes(model: torch.nn.Module) -> float:
    """The model's weights in fp32 bytes (every parameter and buffer once, 4 bytes each)."""
    seen = {id(t): t for t in (*model.parameters(), *model.buffers())}
    return 4.0 * sum(t.numel() for t in seen.values())


def resident_now() -> float:
    """This process's resident bytes now (0 where ``/proc`` cannot tell)."""
    return (read_status_mb("VmRSS") or 0.0) * 2**20


def memory_skip(steppers: Steppers, cand: Candidate, budget: float) -> str | None:
    """Why building ``cand`` now would break the tune's memory ``budget``, or None."""
    kinds = frozenset(str(k) for k in cand.kinds)
    need = resident_need(kinds, cand.weights, cand.dtype, fp32_bytes(steppers.model))
    if not need:
        return None
    why = memory_reason(resident_now(), need, budget)
    return None if why is None else f"{cand.name} {why}"
