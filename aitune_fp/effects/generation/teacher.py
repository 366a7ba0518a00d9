"""Teacher-forced accuracy of a stepper against the model in eager fp32.

Rules: the reference continuation is eager fp32 greedy; the reference logits at every new
position come from one fp32 forward over prompt + continuation; the candidate runs its prefill
on the prompt, then decode steps fed the *reference* tokens, so each position is judged on the
same context. Reported: top-1 agreement over all positions and rows, RMS relative error of the
logits, and the first position where the candidate's free-running greedy output diverges.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from aitune_fp.effects.generation.loop import Stepper, greedy


@dataclass(frozen=True, slots=True)
class TeacherReference:
    """Eager fp32 continuation and its logits ([B, new, V]) for one held-out prompt batch."""

    input_ids: torch.Tensor
    continuation: torch.Tensor
    logits: torch.Tensor


@torch.inference_mode()
def reference(
    model: Any, reference_stepper: Stepper, input_ids: torch.Tensor, new: int
) -> TeacherReference:
    """The eager fp32 reference for ``input_ids`` and ``new`` tokens."""
    whole = greedy(reference_stepper, input_ids, max_new_tokens=new)
    length = input_ids.shape[1]
    logits = model(input_ids=whole[:, :-1]).logits[:, length - 1 :, :].float()
    return TeacherReference(input_ids, whole[:, length:], logits)


@torch.inference_mode()
def teacher_forced(stepper: Stepper, ref: TeacherReference) -> tuple[float, float, int | None]:
    """(top-1 agreement, RMS relative error, first free-running divergence) vs ``ref``."""
    new = ref.continuation.shape[1]
    steps = [stepper.prefill(ref.input_ids, None, ref.input_ids.shape[1] + new)]
    for i in range(new - 1):
        steps.append(stepper.decode(ref.continuation[:, i : i + 1]))
    got = torch.stack(steps, dim=1).float()
    top1 = float((got.argmax(-1) == ref.logits.argmax(-1)).float().mean())
    rms = float(
        (got - ref.logits).pow(2).mean().sqrt() / ref.logits.pow(2).mean().sqrt().clamp_min(1e-12)
    )
    free = greedy(stepper, ref.input_ids, max_new_tokens=new)[:, ref.input_ids.shape[1] :]
    differ = (free != ref.continuation).any(dim=0).nonzero()
    return top1, rms, int(differ[0]) if differ.numel() else None
