"""Tune wall time as a user gets it from the command line: the same ``aitune-fp demo``
three times, no flags, no service started by hand, side by side with another revision.

Prints figures only (no pass/fail). Per revision (this checkout, and ``--before REV``
checked out with ``git worktree add`` in the scratch folder): a fresh artifact cache, a
fresh TorchInductor cache and a fresh private service folder (``AITUNE_FP_SERVICE_DIR``),
so neither side warms the other's and no tune reaches a service of someone else. Run 1 is
cold; where the revision starts its service by itself, the benchmark then waits until it
answers (a user's next tune comes a while later; the wait is printed, not counted) before
run 2; run 3 follows run 2. Each run is a fresh ``python -m aitune_fp`` process timed from
its start to its exit. Every service started here is stopped at the end.

    python benchmarks/tune_time_cli.py [--model mlp] [--before 8a7b3c2]
    python benchmarks/tune_time.py --cli ...   # the same
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="mlp")
    parser.add_argument("--before", default=None, metavar="REV")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--service-wait", type=float, default=180.0)
    return parser.parse_args(argv)


def _env(source: Path, scratch: Path) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(source), "AITUNE_FP_CACHE": str(scratch / "cache"),
           "AITUNE_FP_SERVICE_DIR": str(scratch / "svc"),
           "TORCHINDUCTOR_CACHE_DIR": str(scratch / "inductor")}  # fmt: skip
    env.pop("AITUNE_FP_SERVICE", None)
    return env


def _cli(env: dict[str, str], cwd: Path, *args: str) -> tuple[float, int, str]:
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "aitune_fp", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, check=False)  # fmt: skip
    return time.monotonic() - began, done.returncode, done.stdout + done.stderr


def _service_up(env: dict[str, str], cwd: Path, seconds: float) -> float | None:
    """Seconds until the revision's own service answered (``None``: none came up)."""
    began = time.monotonic()
    if not (Path(env["AITUNE_FP_SERVICE_DIR"]) / "service.log").exists():
        return None  # this revision started none by itself
    while time.monotonic() - began < seconds:
        if "service pid" in _cli(env, cwd, "service", "status")[2]:
            return time.monotonic() - began
        time.sleep(1.0)
    return None


def _decision(out: Path, model: str) -> str:
    try:
        record = json.loads((out / model / "run.json").read_text())
    except (OSError, ValueError):
        return "no record"
    return str(record.get("provenance", {}).get("decision") or "— (no decision cache)")


def _revision(label: str, source: Path, scratch: Path, args: argparse.Namespace) -> list[str]:
    env, out = _env(source, scratch), scratch / "out"
    scratch.mkdir(parents=True, exist_ok=True)
    rows, walls = [], []
    try:
        for run in range(args.runs):
            wall, code, said = _cli(env, scratch, "demo", "--model", args.model, "--out", str(out))
            walls.append(wall)
            note = f"exit {code}" if code else _decision(out, args.model)
            rows.append(f"{label:>10} run {run + 1}: {wall:7.1f} s  ({note})")
            if code:
                rows.append("    " + said.strip().splitlines()[-1][:200])
            if run == 0:
                up = _service_up(env, scratch, args.service_wait)
                said = f"up {up:.0f} s after run 1 ended" if up is not None else "none came up"
                rows.append(f"{label:>10} service: {said}")
    finally:
        _cli(env, scratch, "service", "stop")
    ratios = " ".join(f"run {i + 1}/run 1 {w / walls[0]:.2f}" for i, w in enumerate(walls[1:], 1))
    return [*rows, f"{label:>10} {ratios}"]


def _checkout(rev: str, scratch: Path) -> Path:
    folder = scratch / f"src-{rev}"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-f", str(folder), rev],
                   check=True, capture_output=True)  # fmt: skip
    return folder


def main(argv: list[str] | None = None) -> int:
    """Run the CLI comparison and print it."""
    args = _arguments(argv)
    with tempfile.TemporaryDirectory(prefix="aitune_cli_time_") as tmp:
        scratch = Path(tmp)
        sides = [("this", ROOT)]
        if args.before:
            sides.append((args.before, _checkout(args.before, scratch)))
        lines = []
        for label, source in sides:
            lines += _revision(label, source, scratch / label, args)
        if args.before:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                            str(scratch / f"src-{args.before}")], check=False)  # fmt: skip
    print(f"demo --model {args.model}, fresh processes; load {os.getloadavg()[0]:.2f} at the end")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
