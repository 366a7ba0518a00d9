"""Cold tune wall side by side with NVIDIA AITune 0.6, fresh processes, default search.

Prints figures only. For each model × strategy it runs, alternately (ours first in odd
repeats, AITune first in even ones, so drift in the machine's load falls on both), one
cold tune of ours (``aitune_fp.tune_module`` with its default search, a fresh artifact
cache and Inductor cache, no tuning service) and one of AITune (:mod:`aitune_side`, with
the Python given by ``--aitune-python``, the four CPU-capable backends it ships), each in a
fresh process whose wall is taken from outside (imports included). Then each pair's ratio
(ours / AITune), the p50 of the ratios and the summed walls.

    python benchmarks/vs_aitune.py --aitune-python /path/to/venv/bin/python \\
        [--models mlp,cnn,transformer] [--strategies max-throughput,min-latency] [--repeats 1]
        [--max-batch 64]

``--aitune-path`` is prepended to that Python's ``PYTHONPATH`` (e.g. a folder of import
shims for NVIDIA packages that cannot be installed on a machine without a GPU: AITune
imports ``tensorrt`` at start-up even when no TensorRT backend is used).

``--picks`` also re-measures each pair's picks: each side saves what its tune picked
(``aitune_fp.save``, ``aitune.torch.save``; the seconds a save took are printed by the
side and taken off its wall), then :mod:`picks_remeasure` loads both in one process of
AITune's Python (with this Python's packages after ``--aitune-path`` on its path) and
times them interleaved for ``--picks-seconds``.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
OURS = """
import sys, torch
sys.path.insert(0, {root!r})
import aitune_fp
from aitune_fp.models import DEMO_MODELS
from aitune_fp.shell.io import perform
demo = DEMO_MODELS[{model!r}]
torch.manual_seed(0)
strategy = {{"max-throughput": aitune_fp.max_throughput,
             "min-latency": aitune_fp.min_latency}}[{strategy!r}]
bound = {{"max_batch_size": {ceiling}}} if {ceiling} else {{}}
tuned = perform(aitune_fp.tune_module(demo.factory().eval(), list(demo.samples()), strategy,
                                      cache_dir={cache!r}, **bound)).unwrap()
print("PICK", tuned.backend, flush=True)
if {save!r}:
    import time
    began = time.monotonic()
    aitune_fp.save(tuned, {save!r})
    print("SAVE_S", time.monotonic() - began)
"""


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--aitune-python", required=True)
    parser.add_argument("--aitune-path", default="")
    parser.add_argument("--models", default="mlp,cnn,transformer")
    parser.add_argument("--strategies", default="max-throughput,min-latency")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--picks", action="store_true", help="re-measure both picks, each pair")
    parser.add_argument("--picks-seconds", type=float, default=20.0)
    parser.add_argument(
        "--max-batch",
        type=int,
        default=0,
        help="the largest batch size both sides try (a power of two; 0: each its own default)",
    )
    return parser.parse_args()


def _timed(command: list[str], env: dict[str, str]) -> tuple[float, str]:
    """``command``'s wall seconds and its pick (or the tail of its error)."""
    began = time.monotonic()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    wall = time.monotonic() - began
    text = done.stdout + done.stderr
    wall -= sum(float(line[7:]) for line in text.splitlines() if line.startswith("SAVE_S "))
    picks = [line[5:] for line in text.splitlines() if line.startswith("PICK ")]
    picks += re.findall(r"\| backend: (.+?) \| speedup", text)  # AITune's own log line
    if done.returncode != 0 or not picks:
        return wall, "FAILED: " + (done.stderr.strip().splitlines() or ["?"])[-1][:100]
    return wall, picks[-1]


def _one(
    side: str, pair: tuple[str, str], args: argparse.Namespace, saves: Path | None
) -> tuple[float, str]:
    """One cold tune by ``side`` in a fresh process with fresh caches (its pick saved under
    ``saves`` when given)."""
    model, strategy = pair
    with tempfile.TemporaryDirectory() as scratch:
        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=f"{scratch}/inductor",
                   AITUNE_FP_SERVICE="0", HOME=os.environ.get("HOME", scratch))  # fmt: skip
        if side == "ours":
            save = str(saves / "ours") if saves else ""
            code = OURS.format(root=str(HERE.parent), model=model, strategy=strategy,
                               cache=f"{scratch}/cache", ceiling=args.max_batch,
                               save=save)  # fmt: skip
            return _timed([sys.executable, "-c", code], env)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (args.aitune_path, str(HERE.parent)) if p)
        env["XDG_CACHE_HOME"] = f"{scratch}/xdg"  # AITune's cache and JIT cache
        if saves:
            env["AITUNE_SIDE_SAVE"] = str(saves / "aitune.ait")
        script = str(HERE / "aitune_side.py")
        ceiling = [str(args.max_batch)] if args.max_batch else []
        return _timed([args.aitune_python, script, model, strategy, *ceiling], env)


def _picks(pair: tuple[str, str], args: argparse.Namespace, saves: Path) -> str:
    """The re-measure of both saved picks (:mod:`picks_remeasure`), its one line."""
    ours_site = sysconfig.get_paths()["purelib"]
    path = (args.aitune_path, str(HERE.parent), ours_site)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in path if p))
    script = str(HERE / "picks_remeasure.py")
    done = subprocess.run([args.aitune_python, script, *pair, str(saves / "ours"),
                           str(saves / "aitune.ait"), str(args.picks_seconds)],
                          env=env, capture_output=True, text=True, check=False)  # fmt: skip
    lines = [line for line in done.stdout.splitlines() if line.startswith("PICKS ")]
    why = (done.stderr.strip().splitlines() or ["?"])[-1]
    return lines[-1] if lines else f"PICKS failed: {why}"


def main() -> int:
    """Run the pairs and print the table, the p50 ratio and the sums."""
    args = _arguments()
    rows: list[tuple[str, str, float, float, str, str]] = []
    print(f"{'model':<12} {'strategy':<15} {'ours s':>8} {'AITune s':>9} {'ratio':>6}  picks")
    for repeat in range(args.repeats):
        for model in args.models.split(","):
            for strategy in args.strategies.split(","):
                order = ("ours", "aitune") if repeat % 2 == 0 else ("aitune", "ours")
                with tempfile.TemporaryDirectory() as kept:
                    saves = Path(kept) if args.picks else None
                    got = {side: _one(side, (model, strategy), args, saves) for side in order}
                    picked = _picks((model, strategy), args, Path(kept)) if saves else ""
                (ours, our_pick), (theirs, their_pick) = got["ours"], got["aitune"]
                rows.append((model, strategy, ours, theirs, our_pick, their_pick))
                print(f"{model:<12} {strategy:<15} {ours:>8.1f} {theirs:>9.1f} "
                      f"{ours / theirs:>6.2f}  {our_pick} | {their_pick}", flush=True)  # fmt: skip
                if picked:
                    print(f"{'':<28} {picked}", flush=True)
    ratios = [r[2] / r[3] for r in rows]
    print(f"p50 ratio (ours / AITune): {statistics.median(ratios):.2f} over {len(rows)} pairs; "
          f"sums {sum(r[2] for r in rows):.0f} s vs {sum(r[3] for r in rows):.0f} s")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
