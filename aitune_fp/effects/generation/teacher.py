"""Teacher-forced accuracy of a stepper against the model in eager fp32.

Rules: the reference continuation is eager fp32 greedy; the reference logits at every new
position come from one fp32 forward over prompt + continuation that keeps only the logits of
those positions (``logits_to_keep``: a large vocabulary never materialises the prompt's);
the candidate runs its prefill on the prompt, then decode steps fed the *reference* tokens,
so each position is judged on the same context. Reported
(:class:`~aitune_fp.core.generation.records.TeacherFigures`): top-1 agreement over all
positions and rows, RMS relative error of the logits, the mean KL divergence of the
next-token distributions from the reference's, the positions where the reference's top-2
margin is at least :data:`~aitune_fp.core.generation.accuracy_rule.CLEAR_MARGIN` and the
agreement on them, and the first position where the candidate's free-running greedy output
diverges — the first position where its teacher-forced argmax differs from the reference
token in any row (until then its free run sees exactly the reference's context, so the two
are the same position, and no second run is needed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from aitune_fp.core.generation.accuracy_rule import CLEAR_MARGIN
from aitune_fp.core.generation.records import TeacherFigures
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
    logits = model(input_ids=whole[:, :-1], logits_to_keep=new).logits[:, -new:, :].float()
    return TeacherReference(input_ids, whole[:, length:], logits)


def figures(got: torch.Tensor, ref: TeacherReference) -> TeacherFigures:
    """The figures of teacher-forced logits ``got`` ([B, new, V]) against ``ref``, one row
    at a time (a large vocabulary's softmaxes are never held for every row at once)."""
    want = ref.logits
    agree = got.argmax(-1) == want.argmax(-1)
    top1 = float(agree.float().mean())
    err, norm, kl = 0.0, 0.0, 0.0
    clear = torch.zeros_like(agree)
    for row in range(got.shape[0]):
        g, w = got[row], want[row]
        err += float((g - w).pow(2).sum())
        norm += float(w.pow(2).sum())
        logp, logq = w.log_softmax(-1), g.log_softmax(-1)
        kl += float((logp.exp() * (logp - logq)).sum())
        best2 = w.topk(2, dim=-1).values
        clear[row] = (best2[:, 0] - best2[:, 1]) >= CLEAR_MARGIN
    positions = agree.numel()
    rms = (err / max(norm, 1e-24)) ** 0.5
    count = int(clear.sum())
    clear_top1 = float(agree[clear].float().mean()) if count else None
    differ = (got.argmax(-1) != ref.continuation).any(dim=0).nonzero()
    first = int(differ[0]) if differ.numel() else None
    return TeacherFigures(top1, rms, first, kl / max(positions, 1), count, clear_top1)


@torch.inference_mode()
def teacher_forced(stepper: Stepper, ref: TeacherReference) -> TeacherFigures:
    """The candidate's teacher-forced :class:`TeacherFigures` against ``ref``."""
    new = ref.continuation.shape[1]
    steps = [stepper.prefill(ref.input_ids, None, ref.input_ids.shape[1] + new)]
    for i in range(new - 1):
        steps.append(stepper.decode(ref.continuation[:, i : i + 1]))
    return figures(torch.stack(steps, dim=1).float(), ref)
