"""Per-call overhead of ``TunedModule`` over calling the winning runner directly.

Prints figures only (no pass/fail): both paths are timed side by side in one run, in
interleaved blocks, and the median per-call difference is reported, together with the
profiler's own per-call timing overhead. The envelope check's share is shown by timing the
wrapper around a no-op runner with the check (as shipped) and without it (as before the
envelope), side by side, and the check alone.

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

from aitune_fp import ProfilingPlan, min_latency, tune_module
from aitune_fp.core.measure.stop_rules import fixed_steps
from aitune_fp.effects.backends.base import ConfigIdentity
from aitune_fp.effects.backends.eager import TorchEager
from aitune_fp.effects.measure.timing import timer_overhead_ns
from aitune_fp.models import DEMO_MODELS
from aitune_fp.shell.io import perform
from aitune_fp.shell.tuned_module import CallLimits, TunedModule


@dataclasses.dataclass(frozen=True, slots=True)
class _Noop(ConfigIdentity):
    """A stand-in backend config (not eager, so the wrapper keeps its envelope check)."""

    name: str = dataclasses.field(default="noop", init=False)

    def unavailable_reason(self, device: torch.device) -> str | None:
        """Never built."""
        return None

    def build(self, *_: Any) -> Any:
        """Never built."""
        raise NotImplementedError


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
    tuned = perform(
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
    # The wrapper's own cost, isolated: TunedModules around a no-op runner, with the
    # envelope check (a non-eager config keeps it) and without it (the wrapper before it).
    noop_built = dataclasses.replace(tuned.built, runner=lambda *a, **k: None)
    checked = TunedModule(
        noop_built, _Noop(), tuned.selection, tuned.samples, limits=CallLimits(64)
    )
    unchecked = TunedModule(noop_built, TorchEager(), tuned.selection, tuned.samples)
    assert checked.envelope is not None and checked.envelope.admits(args_, kwargs)
    admits = checked.envelope.admits
    bare: list[float] = []
    around: list[float] = []
    plain: list[float] = []
    check: list[float] = []
    for block in range(args.blocks):
        four = [
            (bare, lambda: noop_built.runner(*args_, **kwargs)),
            (around, lambda: checked(*args_, **kwargs)),
            (plain, lambda: unchecked(*args_, **kwargs)),
            (check, lambda: admits(args_, kwargs)),
        ]
        for sink, fn in four if block % 2 == 0 else reversed(four):
            sink.append(per_call_us(fn, args.calls * 10))
    print(f"model={args.model} winner={tuned.backend}")
    print(f"runner direct : median {statistics.median(direct):8.2f} µs/call")
    print(f"TunedModule   : median {statistics.median(wrapped):8.2f} µs/call")
    print(
        f"overhead      : median {statistics.median(diffs):8.2f} µs/call "
        f"(min {min(diffs):.2f}, max {max(diffs):.2f}; target < 5 µs)"
    )
    base = statistics.median(bare)
    print(
        f"wrapper alone : median {statistics.median(around) - base:8.2f} "
        "µs/call (TunedModule around a no-op runner vs the no-op runner, envelope checked)"
    )
    print(
        f"  unchecked   : median {statistics.median(plain) - base:8.2f} "
        "µs/call (the same wrapper without the envelope check, as before it)"
    )
    print(f"  check alone : median {statistics.median(check):8.2f} µs/call (Envelope.admits)")
    print(f"profiler timer: {timer_overhead_ns(torch.device('cpu')) / 1000:.3f} µs/call")
    return 0


if __name__ == "__main__":
    sys.exit(main())
