"""OpenVINO's options side by side with ONNX Runtime on the same models: which to search?

Prints figures only (no pass/fail). For each model it builds the ``openvino`` backend once
(ONNX export → IR) and compiles that IR once per option set (precision hint f32 / bf16,
performance hint LATENCY / THROUGHPUT, ``NUM_STREAMS`` 1, ``INFERENCE_NUM_THREADS`` 1),
and builds ``onnxruntime`` (fp32) beside them. Each configuration is validated against
eager (the accuracy figures of the tuner's own validation) and timed at batch 1 and 16,
interleaved (every round visits every configuration in a fresh random order, a block of
calls each), ``--rounds`` rounds; the figure is the median over rounds of each block's
median call, in milliseconds, and the ratio to ONNX Runtime fp32 at the same batch.

Models: the demo models and ``bert`` (the BERT-like classifier of
``benchmarks/precision.py``: hidden 256, 4 layers, sequence 64).

    python benchmarks/openvino_options.py [--models bert,transformer] [--rounds 5]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from returns.unsafe import unsafe_perform_io

sys.path.insert(0, str(Path(__file__).resolve().parent))

from runtime_options import _call, _model

from aitune_fp.effects.backends._export import eager_layout
from aitune_fp.effects.backends._onnx import saved_graph
from aitune_fp.effects.backends.base import Built
from aitune_fp.effects.backends.openvino import OpenVino
from aitune_fp.effects.backends.ort import OnnxRuntime
from aitune_fp.effects.checks.validate import validate
from aitune_fp.effects.inputs.samples import make_batch, normalise_samples

BATCHES = (1, 16)
CPU = torch.device("cpu")
OPTIONS: tuple[dict[str, Any], ...] = (
    {},
    {"performance_hint": "THROUGHPUT"},
    {"num_streams": 1},
    {"threads": 1},
    {"precision": "bfloat16"},
    {"precision": "bfloat16", "performance_hint": "THROUGHPUT"},
)


def _built(result: Any) -> Built:
    built: Built = unsafe_perform_io(result.unwrap())
    return built


def _runners(module: torch.nn.Module, samples: Any, work: Path) -> dict[str, Built]:
    """Every configuration's built runner: the OpenVINO option sets on one IR, and ORT."""
    base = _built(OpenVino().build(module, samples, CPU, work / "ov"))
    assert base.artifact is not None
    layout = eager_layout(module, make_batch(samples, 1))
    graph = saved_graph(base.artifact, samples.spec, layout.treespec)
    built = {OpenVino(**o).describe(): OpenVino(**o).compiled(graph, samples.spec) for o in OPTIONS}
    built["onnxruntime"] = _built(OnnxRuntime().build(module, samples, CPU, work / "ort"))
    return built


def _accuracy(name: str, built: Built, module: torch.nn.Module, samples: Any) -> str:
    """The tuner's validation verdict and figures for one configuration."""
    checked = validate(name, built, module, samples, CPU, batch_sizes=(1, 16))
    try:
        report = unsafe_perform_io(checked.unwrap()).as_dict()
    except Exception:
        return "refused: " + unsafe_perform_io(checked.failure()).message[:80]
    top1 = report.get("top1_agreement")
    return f"rel RMS {report.get('rms_rel_error', 0.0):.1e}" + (
        f", top-1 {top1:.1%}" if top1 is not None else ""
    )


def _time(calls: dict[str, Callable[[], Any]], rounds: int, block: int) -> dict[str, float]:
    """Median over rounds of each block's median call (ms), configurations interleaved."""
    seen: dict[str, list[float]] = {k: [] for k in calls}
    for _ in range(rounds):
        order = list(calls)
        random.shuffle(order)
        for key in order:
            fn = calls[key]
            times = []
            for _ in range(block):
                t0 = time.perf_counter()
                fn()
                times.append((time.perf_counter() - t0) * 1e3)
            seen[key].append(statistics.median(times))
    return {k: statistics.median(v) for k, v in seen.items()}


def _bound(runner: Callable[..., Any], x: Any) -> Callable[[], Any]:
    """``runner`` called on ``x``, as a function of nothing."""
    return lambda: _call(runner, x)


def run(name: str, rounds: int) -> None:
    """Print one model's table."""
    module, make = _model(name)
    module = module.eval()
    samples = normalise_samples([make(2), make(3)])
    with tempfile.TemporaryDirectory() as tmp, torch.inference_mode():
        built = _runners(module, samples, Path(tmp))
        accuracy = {k: _accuracy(k, b, module, samples) for k, b in built.items()}
        for bs in BATCHES:
            x = make(bs)
            for b in built.values():
                _call(b.runner, x)
            calls = {k: _bound(b.runner, x) for k, b in built.items()}
            medians = _time(calls, rounds, 20)
            ort = medians["onnxruntime"]
            print(f"\n{name}, batch {bs} (ms, median of {rounds} interleaved rounds)")
            for key, ms in sorted(medians.items(), key=lambda kv: kv[1]):
                print(f"  {key:60s} {ms:8.3f} ms  {ort / ms:5.2f}x ORT  {accuracy[key]}")


def main() -> None:
    """Parse the flags and print every model's table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="bert,transformer")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    torch.manual_seed(0)
    for name in args.models.split(","):
        run(name, args.rounds)


if __name__ == "__main__":
    main()
