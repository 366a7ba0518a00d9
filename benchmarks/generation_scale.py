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
* with ``--ov-python`` (a Python whose environment has optimum-intel, which does not import
  beside this project's transformers), OpenVINO used directly as a user of optimum-intel
  would: ``OVModelForCausalLM`` exported from the saved model with f32 weights, int8 and
  int4 weight compression (precision hint f32, latency hint, every core), each timed the same
  way in that process, and judged by this project's accuracy policy on held-out rows (its
  teacher-forced logits against eager fp32's, :mod:`aitune_fp.core.generation.accuracy_rule`).

Prints one JSON line per figure and a markdown table at the end.

    python benchmarks/generation_scale.py [--layers 24] [--new 48] [--runs 5]
                                          [--ov-python /path/to/optimum/venv/bin/python]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
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

_OV_SIDE = r"""
import json, statistics, sys, time, torch
from optimum.intel import OVModelForCausalLM, OVWeightQuantizationConfig
path, ref_path = sys.argv[1], sys.argv[2]
new, runs, threads = (int(a) for a in sys.argv[3:6])
ref = torch.load(ref_path)
config = {"INFERENCE_PRECISION_HINT": "f32", "PERFORMANCE_HINT": "LATENCY",
          "INFERENCE_NUM_THREADS": threads}
variants = {"f32": None, "int8": OVWeightQuantizationConfig(bits=8),
            "int4": OVWeightQuantizationConfig(bits=4)}
for name, q in variants.items():
    start = time.perf_counter()
    kw = {"quantization_config": q} if q is not None else {"load_in_8bit": False}
    m = OVModelForCausalLM.from_pretrained(path, export=True, ov_config=config, **kw)
    built = time.perf_counter() - start
    ids = ref["prompt"]
    m.generate(ids, max_new_tokens=4, min_new_tokens=4, do_sample=False)
    walls = []
    for _ in range(runs):
        t = time.perf_counter()
        m.generate(ids, max_new_tokens=new, min_new_tokens=new, do_sample=False)
        walls.append(time.perf_counter() - t)
    whole = torch.cat([ref["held"], ref["continuation"][:, :-1]], dim=1)
    logits = m(input_ids=whole, attention_mask=torch.ones_like(whole)).logits
    torch.save(logits[:, -ref["continuation"].shape[1]:, :].float(), ref_path + f".{name}")
    speed = new / statistics.median(walls)
    row = {"openvino_direct": name, "tokens_per_s": speed, "build_s": built}
    print(json.dumps(row), flush=True)
    del m
"""


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
    parser.add_argument("--ov-python", default=None)
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
    speeds = _interleaved(
        {
            "hf_eager": lambda: hf_generate(model, ids, None, args.new),
            "tuned": lambda: tuned.generate(ids, max_new_tokens=args.new),
        },
        args.runs,
        args.new,
    )
    _say({"greedy_tokens_per_s": speeds, "tuned_over_hf": speeds["tuned"] / speeds["hf_eager"]})
    if args.ov_python:
        _openvino_direct(model, args, speeds)


def _openvino_direct(model: Any, args: argparse.Namespace, speeds: dict[str, float]) -> None:
    """OpenVINO through optimum-intel in ``--ov-python``, judged by this project's policy."""
    folder = Path(tempfile.mkdtemp())
    model.save_pretrained(folder / "model")
    gen = torch.Generator().manual_seed(1234)
    held = torch.randint(0, 151936, (5, 32), generator=gen)
    ref: TeacherReference = reference(model, Steppers(model).get(BY_NAME["eager_static"]),
                                      held, 64)  # fmt: skip
    ref_path = folder / "ref.pt"
    prompt = torch.randint(0, 151936, (1, 32), generator=torch.Generator().manual_seed(7))
    torch.save({"prompt": prompt, "held": held, "continuation": ref.continuation}, ref_path)
    threads = torch.get_num_threads()
    side = subprocess.run(
        [args.ov_python, "-c", _OV_SIDE, str(folder / "model"), str(ref_path), str(args.new),
         str(args.runs), str(threads)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    for line in side.stdout.splitlines():
        if not line.startswith("{"):
            continue
        row = json.loads(line)
        got = torch.load(f"{ref_path}.{row['openvino_direct']}")
        f = figures(got, ref)
        precision = "float32" if row["openvino_direct"] == "f32" else row["openvino_direct"]
        verdict = teacher_verdict(
            Figures(f.top1, f.rms_rel, int(ref.continuation.numel()), f.kl, f.clear_positions,
                    f.clear_top1), precision, Limits(0.99, 0.1),
        )  # fmt: skip
        row |= {"top1": f.top1, "kl": f.kl, "rms_rel": f.rms_rel, "passes": verdict.accurate,
                "over_hf": row["tokens_per_s"] / speeds["hf_eager"],
                "tuned_over_it": speeds["tuned"] / row["tokens_per_s"]}  # fmt: skip
        _say(row)
    if side.returncode:
        print(side.stderr[-2000:], file=sys.stderr)


if __name__ == "__main__":
    main()
