"""Per-call overhead of ``TunedModule`` over calling the winning runner directly.

Prints figures only (no pass/fail): both paths are timed side by side in one run, in
interleaved blocks, and the median per-call difference is reported, together with the
profiler's own per-call timing overhead.

    python benchmarks/overhead.py [--model mlp] [--calls 20000] [--backends eager,onnxruntime]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import torch
from returns.unsafe import unsafe_perform_io

from aitune_fp import ProfilingPlan, min_latency, tune_module
from aitune_fp.core.measure.stop_rules import fixed_steps
from aitune_fp.effects.profiler import timer_overhead_ns
from aitune_fp.models import DEMO_MODELS
from aitune_fp.shell.tuned_module import TunedModule


def per_call_us(fn: Callable[[], Any], calls: int) -> float:
    """Mean wall time of ``fn`` in µs over ``calls`` calls."""
    t0 = time.perf_counter_ns()
    for _ in range(calls):
        fn()
    return (time.perf_counter_ns() - t0) / calls / 1000.0


def main(argv: list[str] | None = None) -> int:
    """Tune one demo model quickly, then time tuned(x) against runner(x)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="mlp", choices=sorted(DEMO_MODELS))
    ap.add_argument("--calls", type=int, default=2000, help="calls per block")
    ap.add_argument("--blocks", type=int, default=15)
    ap.add_argument("--backends", default="eager", help="comma-separated candidate names")
    args = ap.parse_args(argv)
    demo = DEMO_MODELS[args.model]
    strategy = dataclasses.replace(
        min_latency, plan=ProfilingPlan(batching=False, call_rule=fixed_steps(warmup=3, steps=10))
    )
    tuned = unsafe_perform_io(
        tune_module(demo.build(), demo.samples(), strategy, args.backends.split(","))
    ).unwrap()
    sample = demo.samples()[0]
    args_, kwargs = ((), sample) if isinstance(sample, dict) else ((sample,), {})
    runner = tuned.built.runner
    direct: list[float] = []
    wrapped: list[float] = []
    with torch.inference_mode():
        for block in range(args.blocks):  # interleaved, order alternating per block
            pair = [
                (direct, lambda: runner(*args_, **kwargs)),
                (wrapped, lambda: tuned(*args_, **kwargs)),
            ]
            for sink, fn in pair if block % 2 == 0 else reversed(pair):
                sink.append(per_call_us(fn, args.calls))
    diffs = [w - d for w, d in zip(wrapped, direct, strict=True)]
    # The wrapper's own cost, isolated: the same TunedModule around a no-op runner.
    noop = TunedModule(
        dataclasses.replace(tuned.built, runner=lambda *a, **k: None),
        tuned.backend_config,
        tuned.selection,
        tuned.samples,
    )
    bare: list[float] = []
    around: list[float] = []
    for block in range(args.blocks):
        pair = [
            (bare, lambda: noop.built.runner(*args_, **kwargs)),
            (around, lambda: noop(*args_, **kwargs)),
        ]
        for sink, fn in pair if block % 2 == 0 else reversed(pair):
            sink.append(per_call_us(fn, args.calls * 10))
    print(f"model={args.model} winner={tuned.backend}")
    print(f"runner direct : median {statistics.median(direct):8.2f} µs/call")
    print(f"TunedModule   : median {statistics.median(wrapped):8.2f} µs/call")
    print(
        f"overhead      : median {statistics.median(diffs):8.2f} µs/call "
        f"(min {min(diffs):.2f}, max {max(diffs):.2f}; target < 5 µs)"
    )
    print(
        f"wrapper alone : median {statistics.median(around) - statistics.median(bare):8.2f} "
        "µs/call (TunedModule around a no-op runner vs the no-op runner)"
    )
    print(f"profiler timer: {timer_overhead_ns(torch.device('cpu')) / 1000:.3f} µs/call")
    return 0


if __name__ == "__main__":
    sys.exit(main())
