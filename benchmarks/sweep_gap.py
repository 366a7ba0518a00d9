"""Why the sweep and the verification disagree: one pair, one batch size, three processes.

Prints figures only. The demo transformer's pair ``eager(precision='bfloat16')`` and
``inductor(precision='bfloat16', freezing=True)`` at one batch size is built and timed the
same way in

- (a) ``worker``: a process forked from the tune's own fork server (the one the sweep's
  isolated workers come from: torch, the compilers' modules, the frozen heap);
- (b) ``tune``: this process, the one that runs the verification (after the worker ran);
- (c) ``fresh``: a new Python process (as where a saved tuned module is loaded; the two
  backends keep no loadable artifact, so ``load`` builds them again just so).

In each, two ways of timing: ``alone`` (each backend's warm-up then its timed calls, one
backend after the other, as the sweep does) and ``paired`` (rounds of bursts: a few
settling calls, then ``--calls`` timed calls whose median is the round's sample, the
two alternating, as the verification does). Every figure is the median per-call ms over
rotating inputs (the profiler's pool); ``ratio`` is eager-bf16 ms over inductor-bf16 ms
(above 1: inductor faster). Each context also prints what it runs under: torch's intra-
and inter-op threads, CPU affinity, autocast, denormal flushing, the float32 matmul
precision and the frozen heap's size, and the garbage collector's passes (and their ms)
while timing; ``--threads N`` sets the intra-op threads first in every context, and
``--only tune_frozen`` measures here after freezing the heap as the fork server does (the
effect of the suspects can be tested one by one). Each figure: the wall-clock median,
its 10th percentile, and the median CPU time of the process per call (all threads): on a
shared machine the wall median carries the neighbours' share, the CPU time far less.

    python benchmarks/sweep_gap.py [--batch 8] [--rounds 15] [--calls 10] [--threads 0]
                                   [--no-settle] [--only worker,tune,fresh,tune_frozen]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import torch

from aitune_fp.effects.isolation.worker import settle_heap

sys.path.insert(0, str(Path(__file__).parent))  # the fork server imports this file by name

PAIR = (("eager", {"precision": "bfloat16"}),
        ("inductor", {"precision": "bfloat16", "freezing": True}))  # fmt: skip


def conditions() -> dict[str, Any]:
    """What the process runs under (the suspects of issue 32 §4)."""
    tiny = torch.tensor([1e-39], dtype=torch.float32) * 1.0
    return {
        "pid": os.getpid(),
        "threads": torch.get_num_threads(),
        "interop": torch.get_num_interop_threads(),
        "affinity": sorted(os.sched_getaffinity(0)),
        "autocast_cpu": torch.is_autocast_enabled("cpu"),
        "flush_denormal": bool(tiny.item() == 0.0),
        "matmul_precision": torch.get_float32_matmul_precision(),
        "frozen_objects": gc.get_freeze_count(),
        "gc_objects": len(gc.get_objects()),
        "grad_enabled": torch.is_grad_enabled(),
    }


def _runners(batch: int, work: Path) -> dict[str, Callable[[], Any]]:
    """Each backend of the pair built here, one call per batch of the profiler's pool."""
    from aitune_fp.effects.backends.base import Built
    from aitune_fp.effects.backends.registry import backend_by_name
    from aitune_fp.effects.inputs.samples import normalise_samples
    from aitune_fp.effects.measure.timing import ProfileSettings, call_with, input_pool
    from aitune_fp.models import DEMO_MODELS
    from aitune_fp.shell.io import perform

    model = DEMO_MODELS["transformer"]
    module, samples = model.build().eval(), normalise_samples(model.samples())
    cpu = torch.device("cpu")
    pool = input_pool(samples, batch, cpu, ProfileSettings())
    out: dict[str, list[Callable[[], Any]]] = {}
    for name, options in PAIR:
        backend = backend_by_name(name, **options)
        built: Built = perform(backend.build(module, samples, cpu, work / name)).unwrap()
        out[backend.describe()] = [
            partial(call_with, built.runner, b.args, dict(b.kwargs)) for b in pool
        ]
    return {k: _rotating(v) for k, v in out.items()}


def _rotating(calls: list[Callable[[], Any]]) -> Callable[[], Any]:
    state = [0]

    def call() -> Any:
        state[0] += 1
        return calls[state[0] % len(calls)]()

    return call


def _ms(call: Callable[[], Any]) -> tuple[float, float]:
    """One call's wall-clock ms and the process's CPU ms (every thread) it took."""
    t0, c0 = time.perf_counter_ns(), time.process_time_ns()
    call()
    return (time.perf_counter_ns() - t0) / 1e6, (time.process_time_ns() - c0) / 1e6


def _summary(timed: list[tuple[float, float]]) -> list[float]:
    """Wall median, wall 10th percentile, CPU median: on a shared machine the wall median
    includes the neighbours' share, its lower tail and the CPU time much less so."""
    wall, cpu = [w for w, _ in timed], [c for _, c in timed]
    p10 = statistics.quantiles(wall, n=10, method="inclusive")[0] if len(wall) > 1 else wall[0]
    return [statistics.median(wall), p10, statistics.median(cpu)]


def _alone(calls: dict[str, Callable[[], Any]], n: int) -> dict[str, list[float]]:
    """The sweep's way: 10 warm-up calls then ``n`` timed calls, one backend after the other."""
    out = {}
    for name, call in calls.items():
        for _ in range(10):
            call()
        out[name] = _summary([_ms(call) for _ in range(n)])
    return out


def _burst(call: Callable[[], Any], n: int) -> tuple[float, float]:
    """3 settling calls, then the medians of ``n`` timed calls' wall and CPU ms."""
    for _ in range(3):
        call()
    timed = [_ms(call) for _ in range(n)]
    return statistics.median(w for w, _ in timed), statistics.median(c for _, c in timed)


def _paired(calls: dict[str, Callable[[], Any]], rounds: int, n: int) -> dict[str, list[float]]:
    """The verification's way: rounds of bursts, the two backends alternating."""
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in calls}
    names = list(calls)
    for r in range(rounds):
        for name in names[r % 2 :] + names[: r % 2]:
            samples[name].append(_burst(calls[name], n))
    return {name: _summary(s) for name, s in samples.items()}


def measure(
    batch: int, rounds: int, n: int, threads: int, settle: bool, freeze: bool = False
) -> dict[str, Any]:
    """Build the pair here and time it both ways; the conditions it ran under. ``settle``:
    one full collection before the clock starts, as a worker does since issue 32 (its
    ``settle_heap``) and the tune process does before its rounds."""
    if threads:
        torch.set_num_threads(threads)
    if freeze:
        gc.collect()
        gc.freeze()
    with tempfile.TemporaryDirectory() as tmp, torch.inference_mode():
        calls = _runners(batch, Path(tmp))
        if settle:
            settle_heap()
        with _collections() as collected:
            alone = _alone(calls, rounds * n // 2)
            paired = _paired(calls, rounds, n)
            again = _alone(calls, rounds * n // 2)
    found = {"alone": alone, "paired": paired, "alone_again": again}
    return {"conditions": conditions(), "gc": collected, **found}


@contextlib.contextmanager
def _collections() -> Iterator[dict[str, float]]:
    """The garbage collector's passes while open: how many per generation, and their ms."""
    seen: dict[str, float] = {"gen0": 0, "gen1": 0, "gen2": 0, "ms": 0.0}
    began = [0]

    def note(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            began[0] = time.perf_counter_ns()
            return
        seen[f"gen{info['generation']}"] += 1
        seen["ms"] += (time.perf_counter_ns() - began[0]) / 1e6

    gc.callbacks.append(note)
    try:
        yield seen
    finally:
        gc.callbacks.remove(note)


def _in_worker(conn: Any, *plan: Any) -> None:
    """The worker's side: measure, answer over ``conn``."""
    conn.send(json.dumps(measure(*plan)))
    conn.close()


def in_worker(*plan: Any) -> dict[str, Any]:
    """(a): a process forked from the tune's fork server, started as the tune starts it."""
    from aitune_fp.effects.isolation import server

    libraries = ("torch._inductor",)
    server.start(libraries)
    ctx = server.context(libraries)
    receiver, sender = ctx.Pipe(duplex=False)
    import sweep_gap  # by name, so the fork server's child can import the target

    proc = ctx.Process(target=sweep_gap._in_worker, args=(sender, *plan))
    proc.start()
    sender.close()
    found = json.loads(receiver.recv())
    proc.join()
    return dict(found)


def in_fresh(batch: int, rounds: int, n: int, threads: int, settle: bool) -> dict[str, Any]:
    """(c): a new Python process."""
    argv = [sys.executable, __file__, "--child", f"--batch={batch}", f"--rounds={rounds}",
            f"--calls={n}", f"--threads={threads}"]  # fmt: skip
    argv += [] if settle else ["--no-settle"]
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _show(where: str, found: dict[str, Any]) -> None:
    c = found["conditions"]
    print(f"\n({where}) threads={c['threads']} interop={c['interop']} affinity={c['affinity']} "
          f"autocast={c['autocast_cpu']} ftz={c['flush_denormal']} "
          f"matmul={c['matmul_precision']} frozen={c['frozen_objects']} "
          f"objects={c['gc_objects']}")  # fmt: skip
    g = found["gc"]
    print(f"  gc while timing: {g['gen0']:.0f}/{g['gen1']:.0f}/{g['gen2']:.0f} passes "
          f"(gen 0/1/2), {g['ms']:.1f} ms in all")  # fmt: skip
    for how in ("alone", "paired", "alone_again"):
        ea, eb = found[how].values()
        print(
            f"  {how:<11} median {ea[0]:7.3f} / {eb[0]:7.3f} ms, ratio {ea[0] / eb[0]:.3f}; "
            f"p10 {ea[1]:7.3f} / {eb[1]:7.3f} ms, ratio {ea[1] / eb[1]:.3f}; "
            f"cpu {ea[2]:7.3f} / {eb[2]:7.3f} ms, ratio {ea[2] / eb[2]:.3f}"
        )


def main() -> None:
    """Parse the flags, measure in the three contexts, print side by side."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--threads", type=int, default=0, help="0: leave the default")
    parser.add_argument("--no-settle", action="store_true", help="no collection before timing")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--only", default="worker,tune,fresh", help="also: tune_frozen")
    args = parser.parse_args()
    plan = (args.batch, args.rounds, args.calls, args.threads, not args.no_settle)
    if args.child:
        print(json.dumps(measure(*plan)))
        return
    print(f"{PAIR[0]} / {PAIR[1]} (ratio above 1: the second faster)")
    print(f"pair at batch size {args.batch}: {args.rounds} rounds × {args.calls} calls; "
          f"{'no collection' if args.no_settle else 'one full collection'} before timing; "
          f"load {os.getloadavg()[0]:.2f} (1 min) on {os.cpu_count()} CPUs")  # fmt: skip
    contexts: dict[str, Callable[..., dict[str, Any]]] = {
        "worker": in_worker,
        "tune": measure,
        "fresh": in_fresh,
        "tune_frozen": partial(measure, freeze=True),  # the worker's frozen heap, here
    }
    for where in args.only.split(","):
        _show(where, contexts[where](*plan))


if __name__ == "__main__":
    main()
