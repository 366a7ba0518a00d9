"""Tune wall time per model and per stage, cold and then again with a warm artifact cache.

Prints figures only (no pass/fail). Each model is tuned twice, each time in a fresh
Python process (as a user re-running a tune would; ``--same-process`` tunes twice in one
process instead, as a notebook would), with the same fresh cache folder: the
first run builds everything (cold), the second finds the artifacts of the ahead-of-time
backends (AOTInductor, ONNX Runtime, TensorRT) in the cache and only loads them. Per
backend it prints the build (export/compile or cache load), validate and profile seconds
of both runs, then per model the wall times and the build speedup of the cached run.
TorchInductor's own on-disk compile cache starts empty in a fresh temporary folder per model
(and per revision with ``--before``, so neither side warms the other's), so the cold run is
really cold (its second run may use that cache: torch.compile is not ours to
cache, and the table shows what it gains). That includes Inductor's CPU vector-ISA probe
(test compiles per ISA, about 10 s here, which Inductor caches per machine, not per model);
``--inductor-cache machine`` starts each model's Inductor cache with only that probe done,
as for a new model on a machine that has compiled before.

Then the records' whole-run stage breakdown (their wall accounts, from each tune process's
start to its record: startup, setup, max-batch search, plan, candidates, final rounds,
verification, the winner, and the unaccounted rest), cold and cached, side by side with
``--before``'s where that revision records one (older ones show ``—``).

Each model's block ends with each stage's share of the summed per-backend tune time
(export, compile, cache, the rest of the build, validate, profile, final rounds), cold and
cached. ``--before REV`` also runs the same tunes with the package as it was at git
revision ``REV`` (checked out with ``git worktree add`` in the scratch folder), side by
side in the same run, model by model, and prints the cold and cached wall ratios against it.

``--cli`` instead runs :mod:`tune_time_cli` (the command line, no flags: run 1 cold, runs
2 and 3 warm as a user gets them, with the service each revision starts or does not
start by itself, and its decision cache), with the arguments after ``--cli``.

    python benchmarks/tune_time.py --cli [--model mlp] [--before 8a7b3c2]
    python benchmarks/tune_time.py [--models mlp,cnn,transformer] [--backends NAMES]
                                   [--strategy confident:max-throughput] [--max-batch-size 16]
                                   [--before REV] [--verify-seconds 3] [--rows] [--with-cli]

``--rows`` adds the racing and decision-cache rows (:mod:`tune_time_rows`); ``--with-cli``
then runs the command line's three runs of the first model (:mod:`tune_time_cli`), all in
one run.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tune_time_rows import more_runs, print_rows

STAGES = ("build", "validate", "profile")


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="mlp,cnn,transformer")
    parser.add_argument("--backends", default=None, help="comma-separated (default: all CPU)")
    parser.add_argument("--strategy", default="confident:max-throughput")
    parser.add_argument(
        "--before", default=None, metavar="REV", help="also time the package at git revision REV"
    )
    parser.add_argument("--max-batch-size", type=int, default=16)
    parser.add_argument(
        "--verify-seconds",
        type=float,
        default=0.0,
        help="the verification after selection (the API default 0: none; the CLI's: 3), "
        "passed to revisions that have one",
    )
    parser.add_argument("--device", default="cpu")
    parser.add_argument(
        "--same-process",
        action="store_true",
        help="tune twice in one fresh process (a notebook re-running a tune) instead of two",
    )
    parser.add_argument(
        "--inductor-cache",
        choices=("fresh", "machine"),
        default="fresh",
        help="fresh: Inductor's cache starts empty per model (the first tune on a new "
        "machine); machine: it starts with only the machine's CPU vector-ISA probe done "
        "(a new model on a machine that has compiled before)",
    )
    parser.add_argument(
        "--rows", action="store_true",
        help="also the racing and decision-cache rows (tune_time_rows: warm with --fresh, "
        "the decision cache's hit, cold and warm with AITUNE_FP_RACE=0)",
    )  # fmt: skip
    parser.add_argument(
        "--with-cli",
        action="store_true",
        help="then the command line's three runs of the first model (tune_time_cli)",
    )
    parser.add_argument("--fresh", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--cache", default=None, help=argparse.SUPPRESS)
    return parser.parse_args()


# the wall; per backend: its kind and its stage seconds; the record's whole-run stages;
# the record's decision line (absent from a revision without one)
Timings = tuple[Any, ...]
CACHEABLE = frozenset({"aot_inductor", "onnxruntime", "tensorrt"})
_FIRST_DONE: list[bool] = []  # a tune already ran in this process (--same-process)


def _tune(name: str, args: argparse.Namespace, cache: Path) -> Timings:
    """Tune demo model ``name`` once; wall seconds, per-backend stage seconds and the
    record's whole-run stages (its wall account; empty for a revision without one)."""
    from aitune_fp.core.parse import parse_names

    try:
        from aitune_fp.core.strategies.registry import parse_strategy
    except ImportError:  # a --before revision older than the redesign
        from aitune_fp.core.parse import parse_strategy  # type: ignore[attr-defined,no-redef]
    from aitune_fp.models import DEMO_MODELS

    try:
        from aitune_fp.shell.io import perform
    except ImportError:  # a --before revision older than the redesign
        from aitune_fp.shell.tune_module import perform  # type: ignore[attr-defined,no-redef]
    from aitune_fp.shell.tune_module import run_tuning

    try:
        from aitune_fp.shell.tune_module import TuneOptions
    except ImportError:  # a --before revision taking the options as keywords
        TuneOptions = None  # type: ignore[assignment,misc]

    model = DEMO_MODELS[name]
    backends = list(parse_names(args.backends)) if args.backends else None
    import inspect

    extra = {}
    try:  # the first tune's wall account covers this process's start and imports
        from aitune_fp.shell.wall_clock import count_from_process_start

        if not _FIRST_DONE:
            count_from_process_start()
    except ImportError:  # a --before revision without a wall account
        pass
    _FIRST_DONE.append(True)
    knows_verify = "verify_seconds" in inspect.signature(run_tuning).parameters
    if args.verify_seconds and (TuneOptions is not None or knows_verify):
        extra["verify_seconds"] = args.verify_seconds
    if args.fresh:
        extra["fresh"] = True
    options: dict[str, Any] = {"device": args.device, "cache_dir": cache,
                               "max_batch_size": args.max_batch_size, "model_name": name,
                               **extra}  # fmt: skip
    start = time.perf_counter()  # the model's build and samples are timed, as before
    head = (model.build(), model.samples(), parse_strategy(args.strategy), backends)
    if TuneOptions is None:
        keywords: Any = run_tuning  # the older signature: every option a keyword
        effect = keywords(*head, **options)
    else:
        effect = run_tuning(*head, TuneOptions(**options))
    wall = time.perf_counter() - start
    run = perform(effect).unwrap()
    if run.tuned is not None:
        run.tuned.close()
    stages = {
        ("baseline " if o is run.record.baseline else "") + o.backend: {
            "kind": o.kind,
            **dict(o.stage_seconds),
        }
        for o in run.record.outcomes
    }
    decision = getattr(getattr(run.record, "provenance", None), "decision", None) or "—"
    return wall, stages, _account(run.record), decision


def _account(record: Any) -> dict[str, float]:
    """The record's wall account as ``stage → seconds`` plus ``unaccounted`` and ``wall``."""
    account = getattr(record, "wall", None)
    if account is None:
        return {}
    return {**dict(account.stages), "unaccounted": account.unaccounted, "wall": account.wall}


def _in_fresh_process(
    name: str,
    args: argparse.Namespace,
    cache: Path,
    source: Path | None = None,
    fresh: bool = False,
) -> list[Timings]:
    """Run :func:`_tune` (twice with ``--same-process``) in a new interpreter, importing the
    package from ``source`` (default: this checkout); its results."""
    argv = [sys.executable, str(Path(__file__).resolve()), "--one", name, "--cache", str(cache)]
    argv += ["--same-process"] if args.same_process else []
    argv += ["--strategy", args.strategy, "--max-batch-size", str(args.max_batch_size)]
    argv += ["--verify-seconds", str(args.verify_seconds)] + (["--fresh"] if fresh else [])
    argv += ["--device", args.device] + (["--backends", args.backends] if args.backends else [])
    env = dict(os.environ)
    inductor = cache.parent / f"inductor-{cache.name}"
    machine = cache.parent / "inductor-machine"
    if args.inductor_cache == "machine" and not inductor.exists():
        if not machine.exists():
            _probe_machine(machine)
        shutil.copytree(machine, inductor)
    env["TORCHINDUCTOR_CACHE_DIR"] = str(inductor)
    # this checkout unless told otherwise: an installed aitune_fp (an editable install of
    # another checkout) must not stand in for it
    source = source or Path(__file__).resolve().parent.parent
    env["PYTHONPATH"] = os.pathsep.join([str(source), env.get("PYTHONPATH", "")])
    # cwd outside any checkout: an older revision's workers' server imports from its
    # working directory first, which would be this checkout
    done = subprocess.run(
        argv, capture_output=True, text=True, check=False, env=env, cwd=cache.parent
    )
    if done.returncode != 0:
        raise SystemExit(f"tuning {name} failed:\n{done.stderr[-2000:]}")
    runs = json.loads(done.stdout.strip().splitlines()[-1])
    return [(float(r[0]), r[1], r[2] if len(r) > 2 else {}, *r[3:4]) for r in runs]


def _probe_machine(folder: Path) -> None:
    """Fill ``folder`` as an Inductor cache holding only this machine's vector-ISA probe."""
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(folder)}
    code = "from torch._inductor import cpu_vec_isa; cpu_vec_isa.valid_vec_isa_list()"
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


def _print_model(name: str, cold: Timings, warm: Timings) -> float:
    """Print one model's table; return the build speedup of the cached run."""
    print(f"\n{name}: wall {cold[0]:.1f} s cold, {warm[0]:.1f} s with the cache")
    print(f"  {'backend':<28}" + "".join(f"{s + ' s (cold → cached)':>32}" for s in STAGES))
    for backend in cold[1]:
        row = f"  {backend:<28}"
        for stage in STAGES:
            a = cold[1][backend].get(stage)
            b = warm[1].get(backend, {}).get(stage)
            cell = "—" if a is None or b is None else f"{a:8.2f} → {b:8.2f}"
            row += f"{cell:>32}"
        print(row)
    speedup = _build_line("build, all backends", cold, warm, lambda kind: True)
    _build_line("build, artifact backends", cold, warm, lambda kind: kind in CACHEABLE)
    _shares_line("stage shares, cold", cold)
    _shares_line("stage shares, cached", warm)
    return speedup


def _print_accounts(name: str, columns: list[tuple[str, Timings]]) -> None:
    """Print the whole-run stage breakdown (the records' wall accounts) side by side."""
    if not any(run[2] for _, run in columns):
        return
    stages: list[str] = []
    for _, run in columns:
        stages += [k for k in run[2] if k not in stages and k not in ("unaccounted", "wall")]
    print(f"\n{name}: whole-run stages (s, from the process start)")
    print(f"  {'stage':<20}" + "".join(f"{label:>16}" for label, _ in columns))
    for stage in [*stages, "unaccounted", "wall"]:
        cells = [run[2].get(stage) for _, run in columns]
        row = "".join(f"{'—' if c is None else f'{c:.2f}':>16}" for c in cells)
        print(f"  {stage:<20}{row}")


def _shares_line(label: str, run: Timings) -> None:
    """Print each stage's share of the summed per-backend tune time (disjoint parts)."""
    from aitune_fp.core.report.stages import stage_segments

    totals: dict[str, float] = {}
    for stages in run[1].values():
        numbers = {k: v for k, v in stages.items() if isinstance(v, int | float)}
        for part, seconds in stage_segments(numbers):
            totals[part] = totals.get(part, 0.0) + seconds
    whole = sum(totals.values()) or 1.0
    cells = ", ".join(f"{k} {100 * v / whole:.0f} %" for k, v in totals.items())
    print(f"  {label + ':':<28}{cells} (of {whole:.1f} s)")


def _build_line(label: str, cold: Timings, warm: Timings, keep: Callable[[str], bool]) -> float:
    """Print the summed build seconds of the backends ``keep`` accepts; return the ratio."""
    before = sum(s.get("build", 0.0) for s in cold[1].values() if keep(s["kind"]))
    after = sum(s.get("build", 0.0) for s in warm[1].values() if keep(s["kind"]))
    ratio = before / after if after > 0 else float("inf")
    print(f"  {label + ':':<28}{before:8.2f} s → {after:8.2f} s ({ratio:.1f}× faster)")
    return ratio


def main() -> int:
    """Run the benchmark and print its figures (``--cli ...``: :mod:`tune_time_cli`'s)."""
    if "--cli" in sys.argv[1:]:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from tune_time_cli import main as cli_main

        return cli_main([a for a in sys.argv[1:] if a != "--cli"])
    args = _arguments()
    logging.disable(logging.WARNING)
    if args.one is not None:
        times = 2 if args.same_process else 1
        print(json.dumps([_tune(args.one, args, Path(args.cache)) for _ in range(times)]))
        return 0
    scratch = Path(tempfile.mkdtemp(prefix="aitune_fp-tune-time-"))
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(scratch / "inductor")
    print(
        f"tune_time: strategy {args.strategy}, max batch size {args.max_batch_size}, "
        f"device {args.device}, caches under {scratch}, "
        + ("both runs in one process" if args.same_process else "each run in a fresh process")
        + f", Inductor cache: {args.inductor_cache}"
    )
    before = _checkout(args.before, scratch) if args.before else None
    try:
        _compare(args, scratch, before)
        if args.with_cli:
            from tune_time_cli import main as cli_main

            first = args.models.split(",")[0].strip()
            cli_main(["--model", first] + (["--before", args.before] if args.before else []))
        return 0
    finally:
        if before is not None:
            root = Path(__file__).resolve().parent.parent
            git = ["git", "-C", str(root), "worktree", "remove", "--force", str(before)]
            subprocess.run(git, check=False, capture_output=True)


def _compare(args: argparse.Namespace, scratch: Path, before: Path | None) -> int:
    """Time every model (and, with ``before``, the older package beside it); print it all."""
    speedups, walls = {}, []
    for name in [m.strip() for m in args.models.split(",") if m.strip()]:
        if before is not None:
            old_cold, old_warm = _cold_and_warm(name, args, scratch / f"{name}-before", before)
            print(f"\n[before: {args.before}]", end="")
            _print_model(name, old_cold, old_warm)
        cold, warm = _cold_and_warm(name, args, scratch / name, None)
        if before is not None:
            print("\n[after: this checkout]", end="")
            walls.append((name, old_cold[0], old_warm[0], cold[0], warm[0]))
        speedups[name] = _print_model(name, cold, warm)
        print(f"  warm / cold wall: {warm[0] / cold[0]:.2f}")
        columns = [("cold", cold), ("warm", warm)]
        if args.rows:
            rows = more_runs(name, scratch / name, None, _one_process(args))
            print_rows(name, [*columns, *rows])
            columns += rows
        if before is not None:
            columns = [("before cold", old_cold), ("before warm", old_warm), *columns]
        _print_accounts(name, columns)
    summary = ", ".join(f"{k} {v:.1f}×" for k, v in speedups.items())
    print(f"\ncached second run, build time speedup (all backends): {summary}")
    for name, before_cold, before_warm, new_cold, new_warm in walls:
        print(
            f"{name}: cold {before_cold:.1f} s → {new_cold:.1f} s "
            f"({new_cold / before_cold:.2f}× before), "
            f"warm {before_warm:.1f} s → {new_warm:.1f} s "
            f"(warm/cold {before_warm / before_cold:.2f} → "
            f"{new_warm / new_cold:.2f})"
        )
    return 0


def _one_process(args: argparse.Namespace) -> Callable[..., Timings]:
    """One tune in a fresh process: ``run(name, cache, source, fresh=...)``."""

    def run(name: str, cache: Path, source: Path | None, fresh: bool = False) -> Timings:
        (timings,) = _in_fresh_process(name, args, cache, source, fresh)
        return timings

    return run


def _cold_and_warm(
    name: str, args: argparse.Namespace, cache: Path, source: Path | None
) -> tuple[Timings, Timings]:
    """A cold tune and a cached one of ``name`` with one cache folder."""
    if args.same_process:
        cold, warm = _in_fresh_process(name, args, cache, source)
        return cold, warm
    (cold,) = _in_fresh_process(name, args, cache, source)
    (warm,) = _in_fresh_process(name, args, cache, source)
    return cold, warm


def _checkout(rev: str, scratch: Path) -> Path:
    """The package at git revision ``rev``, checked out (detached) under ``scratch``."""
    root = Path(__file__).resolve().parent.parent
    target = scratch / "before"
    subprocess.run(
        ["git", "-C", str(root), "worktree", "add", "--detach", str(target), rev],
        check=True,
        capture_output=True,
    )
    return target


if __name__ == "__main__":
    sys.exit(main())
