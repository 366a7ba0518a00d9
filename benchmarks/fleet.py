"""Scheduling overhead of the fleet executors against running the same tunes directly.

Prints figures only (no pass/fail). The same jobs (demo models × strategies on the CPU)
are run three ways, each from a fresh output folder, one way after another:

- ``direct``: each job's own ``python -m aitune_fp tune …`` command, one after another
  (the hand-written loop a fleet replaces);
- ``local``: ``aitune-fp fleet run PLAN --executor local`` (one process for the plan, which
  starts the same tune commands);
- ``ray``: ``aitune-fp fleet run PLAN --executor ray`` with a local Ray started for the run
  (skipped when ray is not installed).

The overhead per job is ``(wall of the executor − wall of direct) / jobs``, shown in seconds
and as a share of the mean direct tune. ``--repeat`` repeats the three in turn and takes
medians; on a shared machine the figures are noisy, the side-by-side ratio less so.

    python benchmarks/fleet.py [--models mlp,cnn] [--strategies max-throughput,min-latency]
                               [--backends eager,onnxruntime] [--max-batch-size 4] [--repeat 1]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from aitune_fp.core.fleet import expand, parse_plan
from aitune_fp.shell.fleet.job import tune_argv


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="mlp,cnn")
    parser.add_argument("--strategies", default="max-throughput,min-latency")
    parser.add_argument("--backends", default="eager,onnxruntime")
    parser.add_argument("--max-batch-size", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=1)
    return parser.parse_args()


def _quoted(text: str) -> str:
    return ", ".join(f'"{n}"' for n in text.split(","))


def _plan_text(args: argparse.Namespace) -> str:
    models = "".join(f'[[models]]\nname = "{m}"\n' for m in args.models.split(","))
    return (
        f"strategies = [{_quoted(args.strategies)}]\nbackends = [{_quoted(args.backends)}]\n"
        f"max_batch_size = {args.max_batch_size}\nplot = false\n{models}"
        '[[targets]]\ndevice = "cpu"\n'
    )


def _timed(command: list[str]) -> float:
    began = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - began


def _direct(plan_text: str, folder: Path, cache: str) -> float:
    began = time.perf_counter()
    for i, job in enumerate(expand(parse_plan(plan_text))):
        argv = [*tune_argv(job, cache_dir=cache), "--out", str(folder / str(i))]
        subprocess.run(
            [sys.executable, "-m", "aitune_fp", *argv],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    return time.perf_counter() - began


def _fleet(plan: Path, folder: Path, cache: str, executor: str) -> float:
    command = [sys.executable, "-m", "aitune_fp", "fleet", "run", str(plan), "--out", str(folder)]
    return _timed([*command, "--executor", executor, "--cache-dir", cache])


def main() -> None:
    """Run the comparison and print one line per way."""
    args = _arguments()
    text = _plan_text(args)
    jobs = len(expand(parse_plan(text)))
    ways = ["direct", "local"] + (["ray"] if importlib.util.find_spec("ray") else [])
    walls: dict[str, list[float]] = {w: [] for w in ways}
    with tempfile.TemporaryDirectory(prefix="aitune_fp_fleet_bench_") as tmp:
        root = Path(tmp)
        plan = root / "plan.toml"
        plan.write_text(text)
        cache = str(root / "cache")
        _direct(text, root / "warm", cache)  # first builds fill the artifact cache
        for r in range(args.repeat):
            for way in ways:
                out = root / f"{way}-{r}"
                wall = (
                    _direct(text, out, cache) if way == "direct" else _fleet(plan, out, cache, way)
                )
                walls[way].append(wall)
                print(f"  round {r + 1} {way}: {wall:.1f} s", flush=True)
    direct = statistics.median(walls["direct"])
    per_tune = direct / jobs
    print(
        f"{jobs} jobs ({args.models} × {args.strategies}, backends {args.backends}, max batch "
        f"size {args.max_batch_size}); cpus {os.cpu_count()}; median of {args.repeat}"
    )
    print(f"{'way':<8} {'wall s':>8} {'per job s':>10} {'overhead/job s':>15} {'% of a tune':>12}")
    for way in ways:
        wall = statistics.median(walls[way])
        over = (wall - direct) / jobs
        print(
            f"{way:<8} {wall:8.1f} {wall / jobs:10.2f} {over:15.2f} {100 * over / per_tune:11.1f} %"
        )


if __name__ == "__main__":
    main()
