"""How the input mode changes the ranking on CPU: rotating pool vs a parallel op before each call.

Builds eager and ONNX Runtime for one demo model, then profiles both under each input
mode side by side in one run (modes and backends interleaved, several rounds) and prints
the mean latency and the eager/ORT speedup per mode. Figures only, no pass/fail.

    python benchmarks/input_modes.py [--model mlp] [--batch 8] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from aitune_fp.core.measure.stop_rules import fixed_steps, never_stop
from aitune_fp.effects.backends.base import Backend
from aitune_fp.effects.backends.eager import TorchEager
from aitune_fp.effects.backends.registry import backend_by_name
from aitune_fp.effects.inputs.samples import normalise_samples
from aitune_fp.effects.measure.profiler import SweepPlan, profile_runner
from aitune_fp.effects.measure.timing import ProfileSettings
from aitune_fp.models import DEMO_MODELS
from aitune_fp.shell.io import perform


def main(argv: list[str] | None = None) -> int:
    """Profile eager and ONNX Runtime under every input mode and print the ratios."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="mlp", choices=sorted(DEMO_MODELS))
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    demo = DEMO_MODELS[args.model]
    module, cpu = demo.build(), torch.device("cpu")
    samples = normalise_samples(demo.samples())
    work = Path(tempfile.mkdtemp(prefix="aitune_modes_"))
    runners: dict[str, Callable[..., Any]] = {}
    backends: tuple[Backend, ...] = (TorchEager(), backend_by_name("onnxruntime"))
    for backend in backends:
        built = perform(backend.build(module, samples, cpu, work / backend.name))
        runners[backend.name] = built.unwrap().runner
    modes = ("rotating", "same", "parallel_op")
    means: dict[tuple[str, str], list[float]] = {(m, b): [] for m in modes for b in runners}
    rule = fixed_steps(warmup=5, steps=30)
    for r in range(args.rounds):
        for mode in modes if r % 2 == 0 else tuple(reversed(modes)):
            for name, runner in runners.items():
                profile = perform(
                    profile_runner(
                        name,
                        runner,
                        samples,
                        cpu,
                        SweepPlan((args.batch,), rule, never_stop()),
                        ProfileSettings(input_mode=mode),
                    )
                ).unwrap()
                means[(mode, name)].append(statistics.mean(profile.samples(args.batch)))
    print(
        f"model={args.model} batch={args.batch} rounds={args.rounds} "
        f"threads={torch.get_num_threads()}"
    )
    for mode in modes:
        eager = statistics.median(means[(mode, "eager")])
        ort = statistics.median(means[(mode, "onnxruntime")])
        print(
            f"{mode:12s} eager {eager:8.3f} ms  onnxruntime {ort:8.3f} ms  "
            f"onnxruntime speedup {eager / ort:5.2f}×"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
