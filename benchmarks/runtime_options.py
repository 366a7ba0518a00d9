"""Runtime options side by side: which ones change the fastest configuration?

Prints figures only (no pass/fail). For each model it exports one ONNX graph (the
``onnxruntime`` backend's own export) and opens one session per ONNX Runtime option set on
that same file (intra-op threads 1 / 2, graph optimisation ``basic`` / ``extended`` /
``all``, sequential or parallel execution), and builds the torch runners: eager and
Inductor (``torch.compile``, mode ``default`` and, with ``--autotune``, ``max-autotune``),
each at ``torch.set_num_threads`` 1 and 2 (set around its calls, restored after).

Timing: every configuration at batch 1 and 16, interleaved (each round visits every
configuration in a fresh random order, a block of calls each), ``--rounds`` rounds; the
figure is the median over rounds of each block's median call, in milliseconds. The table
marks, per model and batch, the fastest configuration of each backend and overall, and
whether the backend's default options (ONNX Runtime: threads chosen by ONNX Runtime,
``all``, sequential; torch: the process's thread count) are its fastest.

Models: the demo models (``mlp``, ``cnn``, ``transformer``) and ``bert`` (the BERT-like
classifier of ``benchmarks/precision.py``: hidden 256, 4 layers, sequence 64).

    python benchmarks/runtime_options.py [--models mlp,cnn,transformer,bert]
                                         [--rounds 7] [--autotune]
"""

from __future__ import annotations

import argparse
import logging
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
from torch.utils import _pytree as pytree

sys.path.insert(0, str(Path(__file__).resolve().parent))

from precision import BertLogits

from aitune_fp.effects.backends._build_log import BuildLog
from aitune_fp.effects.backends.base import LoadRequest
from aitune_fp.effects.backends.ort import OnnxRuntime
from aitune_fp.effects.inputs.samples import normalise_samples
from aitune_fp.models import DEMO_MODELS

BATCHES = (1, 16)
ORT_OPTIONS: tuple[dict[str, Any], ...] = (
    {},
    *(
        {"intra_op_threads": t, "graph_optimization": g}
        for t in (1, 2)
        for g in ("basic", "extended", "all")
    ),
    {"intra_op_threads": 2, "execution_mode": "parallel"},
)


def _model(name: str) -> tuple[torch.nn.Module, Callable[[int], Any]]:
    """The module and a maker of its input (a tensor or a keyword dict) at a batch size."""
    g = torch.Generator().manual_seed(1)
    if name == "bert":
        return BertLogits(), lambda b: torch.randint(0, 30522, (b, 64), generator=g)
    demo = DEMO_MODELS[name]
    first = demo.samples()[0]
    if isinstance(first, dict):
        return demo.build(), lambda b: {
            k: torch.randint(0, 1000, (b, *v.shape[1:]), generator=g) for k, v in first.items()
        }
    return demo.build(), lambda b: torch.randn(b, *first.shape[1:], generator=g)


def _call(fn: Callable[..., Any], x: Any) -> Any:
    return fn(**x) if isinstance(x, dict) else fn(x)


def _ort_runners(
    module: torch.nn.Module, make: Callable[[int], Any], work: Path
) -> dict[str, Callable[..., Any]]:
    """One runner per ONNX Runtime option set, all on one exported file."""
    cpu = torch.device("cpu")
    samples = normalise_samples([make(1), make(2)])
    built = unsafe_perform_io(OnnxRuntime().build(module, samples, cpu, work).unwrap())
    with torch.inference_mode():
        outputs = pytree.tree_flatten(_call(module, make(1)))[1]
    loader = OnnxRuntime.declaration.loader
    assert loader is not None
    runners = {}
    for options in ORT_OPTIONS:
        config = OnnxRuntime(**options)
        assert built.artifact is not None
        request = LoadRequest(built.artifact, samples.spec, outputs, cpu, work, BuildLog())
        runners[config.describe()] = loader(config, request).runner
    return runners


def _torch_runners(module: torch.nn.Module, autotune: bool) -> dict[str, Callable[..., Any]]:
    """Eager and Inductor runners (compiled lazily, per batch, on first call)."""
    runners: dict[str, Callable[..., Any]] = {"eager": module}
    runners["inductor"] = torch.compile(module)
    if autotune:
        runners["inductor(mode='max-autotune')"] = torch.compile(module, mode="max-autotune")
    return runners


def _threaded(fn: Callable[..., Any], threads: int) -> Callable[..., Any]:
    """``fn`` run at ``threads`` torch intra-op threads, the previous count restored."""

    def run(*args: Any, **kwargs: Any) -> Any:
        before = torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            with torch.inference_mode():
                return fn(*args, **kwargs)
        finally:
            torch.set_num_threads(before)

    return run


def _block(fn: Callable[..., Any], x: Any, calls: int) -> float:
    """The median of ``calls`` timed calls, in ms."""
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        _call(fn, x)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def _measure(name: str, rounds: int, autotune: bool) -> dict[tuple[str, int], float]:
    module, make = _model(name)
    work = Path(tempfile.mkdtemp(prefix=f"aitune-options-{name}-"))
    configs = dict(_ort_runners(module, make, work))
    for label, fn in _torch_runners(module, autotune).items():
        for threads in (1, 2):
            configs[f"{label} @torch_threads={threads}"] = _threaded(fn, threads)
    inputs = {b: make(b) for b in BATCHES}
    for fn in configs.values():  # warm up (and compile) every configuration at every batch
        for b in BATCHES:
            for _ in range(3):
                _call(fn, inputs[b])
    blocks: dict[tuple[str, int], list[float]] = {}
    order = [(label, b) for label in configs for b in BATCHES]
    rng = random.Random(0)
    for _ in range(rounds):
        rng.shuffle(order)
        for label, b in order:
            calls = 20 if b == 1 else 8
            blocks.setdefault((label, b), []).append(_block(configs[label], inputs[b], calls))
    return {(lb, b): statistics.median(blocks[(lb, b)]) for lb in configs for b in BATCHES}


def _backend(label: str) -> str:
    return label.split("(")[0].split(" @")[0]


def _is_default(label: str) -> bool:
    return label == "onnxruntime" or label.endswith(f"@torch_threads={torch.get_num_threads()}")


def _report(name: str, medians: dict[tuple[str, int], float]) -> None:
    labels = list(dict.fromkeys(label for label, _ in medians))
    print(f"\n== {name} (median ms; * fastest of its backend, ** fastest overall)")
    print(f"{'configuration':64s}" + "".join(f"{'batch ' + str(b):>14s}" for b in BATCHES))
    best = {b: min(labels, key=lambda lb: medians[(lb, b)]) for b in BATCHES}
    best_of = {
        (k, b): min((lb for lb in labels if _backend(lb) == k), key=lambda lb: medians[(lb, b)])
        for k in {_backend(lb) for lb in labels}
        for b in BATCHES
    }
    for label in labels:
        cells = ""
        for b in BATCHES:
            own = best_of[(_backend(label), b)] == label
            mark = "**" if best[b] == label else "*" if own else ""
            cells += f"{medians[(label, b)]:11.3f}{mark:3s}"
        print(f"{label:64s}{cells}")
    for b in BATCHES:
        defaults = [lb for lb in labels if _is_default(lb)]
        pick = min(defaults, key=lambda lb: medians[(lb, b)])
        moved = "same" if pick == best[b] else f"moved to {best[b]}"
        gain = medians[(pick, b)] / medians[(best[b], b)]
        print(f"batch {b}: pick at default options {pick} -> with options: {moved} ({gain:.2f}x)")


def main() -> None:
    """Measure every model and print its table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="mlp,cnn,transformer,bert")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--autotune", action="store_true", help="also Inductor max-autotune")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    print(f"torch threads by default: {torch.get_num_threads()}; figures are noisy (shared CPU)")
    for name in args.models.split(","):
        _report(name, _measure(name, args.rounds, args.autotune))


if __name__ == "__main__":
    main()
