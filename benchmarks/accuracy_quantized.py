"""Evidence for the generation accuracy policy: what bf16 and weight-only int8/int4 change.

Builds a Qwen2.5-0.5B-sized Qwen2 (random weights, seed 0; ``--layers`` to shrink it), draws
5 held-out prompts of 32 tokens and eager fp32's 64-token continuations (320 positions), and
prints, for each reduced candidate, its teacher-forced figures against eager fp32: top-1 over
every position, RMS relative error of the logits, mean KL divergence of the next-token
distributions, and top-1 on the positions whose eager top-2 margin is at least
``CLEAR_MARGIN`` (with their count), then the policy's verdict. ``--peaked F`` multiplies
the final norm's weight by F, so the logits are peaked like a trained model's (F = 8: median
top-1 probability 0.25, median top-2 margin 0.86) while their order is unchanged.

    python benchmarks/accuracy_quantized.py [--peaked 8] [--layers 24]
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import torch

from aitune_fp.core.generation.accuracy_rule import Figures, Limits, teacher_verdict
from aitune_fp.effects.generation.openvino_steps import OpenVinoStepper
from aitune_fp.effects.generation.teacher import reference, teacher_forced
from aitune_fp.models.causal_lm import qwen2_half_billion
from aitune_fp.shell.generation.candidates import BY_NAME, Steppers

VARIANTS = (
    ("openvino_static", "full", "float32"),
    ("openvino_static_int8", "int8", "float32"),
    ("openvino_static_int4", "int4", "float32"),
    ("openvino_static_bf16", "full", "bfloat16"),
)


def main() -> None:
    """Print each variant's figures and verdict as JSON lines."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--peaked", type=float, default=1.0)
    parser.add_argument("--layers", type=int, default=24)
    args = parser.parse_args()
    model = qwen2_half_billion(args.layers, peaked=args.peaked)
    steppers = Steppers(model)
    held = torch.randint(0, 151936, (5, 32), generator=torch.Generator().manual_seed(1234))
    ref = reference(model, steppers.get(BY_NAME["eager_static"]), held, 64)
    best2 = ref.logits.topk(2, -1).values
    margin = (best2[..., 0] - best2[..., 1]).flatten()
    quantiles = [round(float(margin.quantile(q)), 3) for q in (0.1, 0.5, 0.9)]
    top = float(ref.logits.softmax(-1).max(-1).values.median())
    print(json.dumps({"peaked": args.peaked, "margin_q10_q50_q90": quantiles, "p_top1": top}))
    runs: list[tuple[str, Any]] = [
        (n, lambda w=w, p=p: OpenVinoStepper(model, w, p)) for n, w, p in VARIANTS
    ]
    runs.append(("eager_static_bf16", lambda: steppers.get(BY_NAME["eager_static_bf16"])))
    for name, make in runs:
        stepper = make()
        start = time.perf_counter()
        f = teacher_forced(stepper, ref)
        precision = BY_NAME[name].precision
        figures = Figures(f.top1, f.rms_rel, 320, f.kl, f.clear_positions, f.clear_top1)
        verdict = teacher_verdict(figures, precision, Limits(0.99, 0.1))
        print(json.dumps({"candidate": name, "top1": f.top1, "rms_rel": f.rms_rel, "kl": f.kl,
                          "clear": f.clear_positions, "clear_top1": f.clear_top1,
                          "accepted": verdict.accurate,
                          "check_s": time.perf_counter() - start}), flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
