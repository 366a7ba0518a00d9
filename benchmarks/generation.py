"""Generation benchmark: the tuned pick vs Hugging Face eager ``generate``, side by side.

Builds Llama-, GPT-2- and Qwen-style causal LMs from configs (random weights, no download;
6 layers, hidden 512, grouped-query attention where the architecture has it), tunes each with
``tune_generate`` (max tokens/s, every prompt length at every batch size) and reports, for
every (batch, prompt length) point, 64 new tokens, greedy:

* tokens/s end to end: ``batch * new / wall`` of whole ``generate`` calls, the median of
  ``--runs`` runs after one warm-up, for HF eager ``generate`` (dynamic cache) and the pick
  (through ``TunedGenerator.generate``), in the tuning process;
* the strategy's metric (tokens/s from TTFT and inter-token latency) of the pick over HF's,
  twice: as the tune measured it (its record) and re-measured in a fresh Python process that
  loads the saved pick over the model rebuilt from the same seed
  (:func:`aitune_fp.shell.generation.fresh.fresh_measure`); the TTFT and inter-token latency
  (ms) shown are the fresh process's;
* the tune's wall (s), the pick and its phases' backends.

``--quick`` runs the Llama only, at batch 1 and prompt 32. Prints one JSON line per point and
a markdown table at the end.

    python benchmarks/generation.py [--quick] [--models llama,gpt2,qwen] [--vocab 32000]
                                    [--batches 1,8] [--prompts 32,256]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import transformers

from aitune_fp import TunedGenerator, tune_generate
from aitune_fp.effects.generation.loop import hf_generate
from aitune_fp.shell.generation.fresh import fresh_measure, tune_figures
from aitune_fp.shell.io import perform


def _gqa(config_class: Any, model_class: Any, vocab: int) -> torch.nn.Module:
    config = config_class(
        vocab_size=vocab,
        hidden_size=512,
        intermediate_size=1376,
        num_hidden_layers=6,
        num_attention_heads=8,
        num_key_value_heads=2,
        max_position_embeddings=1024,
    )
    return model_class(config)  # type: ignore[no-any-return]


def llama(vocab: int) -> torch.nn.Module:
    """Llama: 6 layers, hidden 512, 8 query / 2 key-value heads, MLP 1376."""
    return _gqa(transformers.LlamaConfig, transformers.LlamaForCausalLM, vocab)


def gpt2(vocab: int) -> torch.nn.Module:
    """GPT-2: 6 layers, hidden 512, 8 heads (no GQA in the architecture)."""
    return transformers.GPT2LMHeadModel(
        transformers.GPT2Config(vocab_size=vocab, n_embd=512, n_layer=6, n_head=8, n_positions=1024)
    )


def qwen(vocab: int) -> torch.nn.Module:
    """Qwen2: 6 layers, hidden 512, 8 query / 2 key-value heads, MLP 1376."""
    return _gqa(transformers.Qwen2Config, transformers.Qwen2ForCausalLM, vocab)


MODELS: dict[str, Callable[[int], torch.nn.Module]] = {"llama": llama, "gpt2": gpt2, "qwen": qwen}


def _wall(call: Callable[[], Any], runs: int) -> float:
    call()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _tokens(tuned: TunedGenerator, ids: torch.Tensor, new: int) -> list[list[int]]:
    out: list[list[int]] = tuned.generate(ids, max_new_tokens=new, min_new_tokens=new).tolist()
    return out


def _point(
    name: str, tuned: TunedGenerator, saved: Path, ids: torch.Tensor, args: argparse.Namespace
) -> dict[str, Any]:
    model, new = tuned.model, args.new
    rows = ids.shape[0] * new
    hf_wall = _wall(lambda: hf_generate(model, ids, None, new), args.runs)
    wall = _wall(lambda: tuned.generate(ids, max_new_tokens=new, min_new_tokens=new), args.runs)
    fresh = fresh_measure(
        saved, f"benchmarks.generation:{name}", ids, new, kwargs={"vocab": args.vocab}
    )
    tune = tune_figures(tuned, *ids.shape)
    return {
        "batch": ids.shape[0],
        "prompt": ids.shape[1],
        "hf_ttft_ms": fresh.hf_ttft_ms,
        "hf_itl_ms": fresh.hf_itl_ms,
        "hf_tok_s": rows / hf_wall,
        "pick_ttft_ms": fresh.ttft_ms,
        "pick_itl_ms": fresh.itl_ms,
        "pick_tok_s": rows / wall,
        "speedup": hf_wall / wall,
        "tune_metric": [tune["tokens_per_s"], tune["hf_tokens_per_s"], tune["speedup"]],
        "fresh_metric": [fresh.tokens_per_s, fresh.hf_tokens_per_s, fresh.speedup],
        "fresh_tokens_equal": fresh.tokens == _tokens(tuned, ids, new),
    }


def run_model(name: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Tune one model and measure every point; one dict per point."""
    torch.manual_seed(0)
    model = MODELS[name](args.vocab).eval()
    gen = torch.Generator().manual_seed(7)
    prompts = [torch.randint(0, args.vocab, (n,), generator=gen) for n in args.prompts]
    start = time.perf_counter()
    made = tune_generate(model, prompts, new_tokens=args.new, batch_sizes=args.batches)
    tuned = perform(made).unwrap()
    wall = time.perf_counter() - start
    saved = Path(tempfile.mkdtemp()) / f"{name}.json"
    tuned.save(saved)
    out = []
    for batch in args.batches:
        for prompt in prompts:
            ids = prompt.repeat(batch, 1)
            row = _point(name, tuned, saved, ids, args)
            row.update(
                model=name,
                pick=tuned.pick.name,
                prefill=tuned.pick.prefill,
                decode=tuned.pick.decode,
                tune_wall_s=wall,
            )
            print(json.dumps(row), flush=True)
            out.append(row)
    for r in tuned.results:
        if r.failure is None:
            print(
                f"  {name} {r.name} b{r.batch} L{r.prompt_len}: TTFT {r.ttft_ms:.1f} ms, ITL "
                f"{r.itl_ms:.2f} ms, {r.tokens_per_s:.1f} tok/s, top-1 {r.top1:.3f}"
            )
    failures = {r.name: r.failure for r in tuned.results if r.failure}
    print(json.dumps({"model": name, "reason": tuned.choice.reason, "failures": failures}))
    return out


def table(rows: list[dict[str, Any]]) -> str:
    """The markdown table of every point."""
    head = (
        "| model | batch | prompt | HF TTFT ms | HF ITL ms | HF tok/s | pick | pick TTFT ms "
        "| pick ITL ms | pick tok/s | speedup | metric: tune | metric: fresh | tune wall s |\n|"
        + "---|"
        * 14
    )
    lines = [
        f"| {r['model']} | {r['batch']} | {r['prompt']} | {r['hf_ttft_ms']:.1f} | "
        f"{r['hf_itl_ms']:.2f} | {r['hf_tok_s']:.1f} | {r['pick']} ({r['prefill']} / "
        f"{r['decode']}) | {r['pick_ttft_ms']:.1f} | {r['pick_itl_ms']:.2f} | "
        f"{r['pick_tok_s']:.1f} | {r['speedup']:.2f}x | {_metric(r['tune_metric'])} | "
        f"{_metric(r['fresh_metric'])} | {r['tune_wall_s']:.0f} |"
        for r in rows
    ]
    return "\n".join([head, *lines])


def _metric(figures: list[float]) -> str:
    pick, hf, speedup = figures
    return f"{pick:.1f} / {hf:.1f} = {speedup:.2f}x"


def main() -> None:
    """Parse the flags, run every model, print the table and the machine's load."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="Llama, batch 1, prompt 32")
    parser.add_argument("--models", default="llama,gpt2,qwen")
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--new", type=int, default=64)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--batches", default="1,8", help="batch sizes, e.g. 1")
    parser.add_argument("--prompts", default="32,256", help="prompt lengths, e.g. 32")
    args = parser.parse_args()
    names = ["llama"] if args.quick else args.models.split(",")
    args.batches = [1] if args.quick else [int(b) for b in args.batches.split(",")]
    args.prompts = [32] if args.quick else [int(p) for p in args.prompts.split(",")]
    rows = [row for name in names for row in run_model(name, args)]
    print(table(rows))
    print(f"load average {os.getloadavg()}, {os.cpu_count()} CPUs, torch {torch.__version__}")


if __name__ == "__main__":
    main()
