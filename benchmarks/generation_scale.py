"""Decode at the size people run: a Qwen2.5-0.5B-sized model tuned with the defaults, side by
side with Hugging Face eager ``generate`` and OpenVINO used directly.

Builds a Qwen2 config the size of Qwen2.5-0.5B (24 layers, hidden 896, 14 query / 2
key-value heads, MLP 4864, vocabulary 151936, tied embeddings; random weights from seed 0,
no download), then:

* tunes it with ``tune_generate`` defaults (prompts of 32 and 64 tokens, 32 new tokens) and
  prints the tune's wall, this process's peak RSS against the fp32 weights, the pick, its
  decode limit line and every candidate's accuracy figures;
* times greedy ``generate`` at batch 1 (prompt 32, ``--new`` tokens), interleaved run by run:
  HF eager ``generate`` and the tuned generator; tokens/s is ``new / wall`` of whole calls,
  the median of ``--runs`` runs after one warm-up;
* where optimum-intel imports (it needs transformers < 5.6: run this file with a Python
  whose environment has it and this project on ``PYTHONPATH``), OpenVINO used directly as a
  user of optimum-intel would: ``OVModelForCausalLM`` exported from the saved model with f32
  weights, int8 and int4 weight compression (its defaults; precision hint f32, latency hint,
  every core), each judged by this project's accuracy policy on 320 held-out positions (its
  teacher-forced logits against eager fp32's,
  :mod:`aitune_fp.core.generation.accuracy_rule`) and timed in the same interleaved rounds
  as HF and the tuned generator.

Prints one JSON line per figure and a markdown table at the end.

    python benchmarks/generation_scale.py [--layers 24] [--new 48] [--runs 5]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import resource
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from aitune_fp import tune_generate
from aitune_fp.core.generation.accuracy_rule import Figures, Limits, teacher_verdict
from aitune_fp.effects.generation.loop import hf_generate
from aitune_fp.effects.generation.teacher import TeacherReference, figures, reference
from aitune_fp.models.causal_lm import qwen2_half_billion
from aitune_fp.shell.generation.candidates import BY_NAME, Steppers
from aitune_fp.shell.io import perform


def _say(row: dict[str, Any]) -> None:
    print(json.dumps(row), flush=True)


def _interleaved(calls: dict[str, Any], runs: int, new: int) -> dict[str, float]:
    walls: dict[str, list[float]] = {k: [] for k in calls}
    for call in calls.values():
        call()
    for _ in range(runs):
        for key, call in calls.items():
            start = time.perf_counter()
            call()
            walls[key].append(time.perf_counter() - start)
    return {k: new / statistics.median(w) for k, w in walls.items()}


def main() -> None:
    """Tune, time side by side, print."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", type=int, default=24)
    parser.add_argument("--new", type=int, default=48)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    model = qwen2_half_billion(args.layers)
    fp32 = sum(p.numel() * p.element_size() for p in model.parameters())
    gen = torch.Generator().manual_seed(7)
    prompts = [torch.randint(0, 151936, (n,), generator=gen) for n in (32, 64)]
    start = time.perf_counter()
    tuned = perform(tune_generate(model, prompts, new_tokens=32, progress=print)).unwrap()
    wall = time.perf_counter() - start
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    _say({"tune_wall_s": wall, "peak_rss_gib": rss / 2**30, "fp32_weights_gib": fp32 / 2**30,
          "rss_over_weights": rss / fp32, "pick": tuned.pick.name})  # fmt: skip
    for r in tuned.results:
        if r.batch == 1 and r.prompt_len == 32:
            _say({"candidate": r.name, "tokens_per_s": r.tokens_per_s, "top1": r.top1,
                  "kl": r.kl, "clear": r.clear_positions, "accurate": r.accurate,
                  "failure": r.failure})  # fmt: skip
    ids = prompts[0][None]
    calls: dict[str, Any] = {
        "hf_eager": lambda: hf_generate(model, ids, None, args.new),
        "tuned": lambda: tuned.generate(ids, max_new_tokens=args.new, min_new_tokens=args.new),
    }
    if importlib.util.find_spec("optimum") is not None:
        held = torch.randint(0, 151936, (5, 32), generator=torch.Generator().manual_seed(1234))
        ref = reference(model, Steppers(model).get(BY_NAME["eager_static"]), held, 64)
        for variant in ("f32", "int8", "int4"):
            direct = _openvino_direct(model, variant, torch.get_num_threads())
            _say({"openvino_direct": variant, **_judged(direct, ref, variant)})
            calls[f"openvino_direct_{variant}"] = (
                lambda d=direct: d.generate(ids, max_new_tokens=args.new,
                                            min_new_tokens=args.new, do_sample=False)
            )  # fmt: skip
    speeds = _interleaved(calls, args.runs, args.new)
    hf = speeds["hf_eager"]
    _say({"greedy_tokens_per_s": speeds, "over_hf": {k: v / hf for k, v in speeds.items()},
          "tuned_over": {k: speeds["tuned"] / v for k, v in speeds.items()}})  # fmt: skip


def _openvino_direct(model: Any, variant: str, threads: int) -> Any:
    """``OVModelForCausalLM`` as a user of optimum-intel builds it from the saved model:
    f32 weights, or int8/int4 weight compression (its defaults), precision hint f32."""
    from optimum.intel import (  # type: ignore[import-not-found]  # an optional tool
        OVModelForCausalLM,
        OVWeightQuantizationConfig,
    )

    folder = Path(tempfile.mkdtemp())
    model.save_pretrained(folder)
    config = {"INFERENCE_PRECISION_HINT": "f32", "PERFORMANCE_HINT": "LATENCY",
              "INFERENCE_NUM_THREADS": threads}  # fmt: skip
    bits = {"f32": None, "int8": 8, "int4": 4}[variant]
    quant: dict[str, Any] = {"load_in_8bit": False}
    if bits is not None:
        quant = {"quantization_config": OVWeightQuantizationConfig(bits=bits)}
    return OVModelForCausalLM.from_pretrained(folder, export=True, ov_config=config, **quant)


def _judged(ov_model: Any, ref: TeacherReference, variant: str) -> dict[str, Any]:
    """The OpenVINO model's teacher-forced figures and this project's verdict on them."""
    whole = torch.cat([ref.input_ids, ref.continuation[:, :-1]], dim=1)
    new = ref.continuation.shape[1]
    logits = ov_model(input_ids=whole, attention_mask=torch.ones_like(whole)).logits
    f = figures(logits[:, -new:, :].float(), ref)
    precision = "float32" if variant == "f32" else variant
    verdict = teacher_verdict(
        Figures(f.top1, f.rms_rel, int(ref.continuation.numel()), f.kl, f.clear_positions,
                f.clear_top1), precision, Limits(0.99, 0.1),
    )  # fmt: skip
    return {"top1": f.top1, "kl": f.kl, "rms_rel": f.rms_rel, "passes": verdict.accurate}


if __name__ == "__main__":
    main()
