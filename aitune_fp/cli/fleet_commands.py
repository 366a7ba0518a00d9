"""``fleet run`` and ``fleet report``: tune a whole plan, then read its summary.

Rules:
- ``fleet run PLAN.toml --out DIR [--executor local|ray] [--address A] [--force]`` checks
  the plan, runs its jobs (one ``tune`` process each), writes ``DIR/<model>/<target>/
  <strategy>/run.json``, ``DIR/fleet.json`` and the summary, and prints the summary table;
- progress goes to stderr: on a terminal a live table of done / running / failed per
  target, elsewhere one line per finished job with its target's counts;
- ``fleet run`` exits 0 when every job is complete or skipped, 1 with one line naming the
  failed jobs otherwise (a bad plan too: ``PLAN line N: field: …``), 130 when interrupted
  (Ctrl-C or SIGTERM; the index then marks the unfinished jobs ``interrupted``);
- ``fleet report DIR`` prints the table of every job, writes ``summary.json``,
  ``summary.md`` and one plot per target, and exits 0 once it has read the index.
"""

from __future__ import annotations

import argparse
import signal
from types import FrameType
from typing import Any

EXECUTOR_CHOICES = ("local", "ray")


def add_fleet_parser(sub: Any) -> None:
    """Add ``fleet run`` and ``fleet report`` to the command line's subparsers."""
    fleet = sub.add_parser("fleet", help="tune many models on many targets from one plan")
    verbs = fleet.add_subparsers(dest="fleet_command", required=True, metavar="VERB")
    run = verbs.add_parser("run", help="run every job of a plan (TOML)")
    run.add_argument("plan", metavar="PLAN.toml")
    run.add_argument("--out", default="runs/fleet", metavar="DIR", help="default: runs/fleet")
    run.add_argument("--executor", choices=EXECUTOR_CHOICES, default="local", help="default: local")
    run.add_argument(
        "--address", default=None, metavar="A", help="Ray cluster address (default: start one)"
    )
    run.add_argument("--force", action="store_true", help="re-run jobs that are complete")
    run.add_argument(
        "--cache-dir", default=None, metavar="DIR", help="build folders and artifact cache"
    )
    report = verbs.add_parser("report", help="summarise a fleet's output folder")
    report.add_argument("out", metavar="DIR")


def _table(rows: Any) -> Any:
    from rich.table import Table

    table = Table(title="fleet summary", title_justify="left")
    for header in ("model", "target", "strategy", "selected backend", "speedup", "status"):
        table.add_column(header, justify="right" if header == "speedup" else "left")
    styles = {"complete": "green", "skipped": "cyan", "failed": "red", "interrupted": "yellow"}
    for r in rows:
        status = f"[{styles[r.status]}]{r.status}[/]"
        table.add_row(r.model, r.target, r.strategy, r.backend or "—", r.speedup_text, status)
    return table


def _show_summary(out: Any, err: Any, folder: str) -> Any:
    from aitune_fp.shell.fleet.report import write_summary

    try:
        summary = write_summary(folder)
    except ValueError as error:
        from aitune_fp.cli.outputs import CliError

        raise CliError(str(error)) from None
    out.print(_table(summary.rows))
    for row in summary.rows:
        if row.status in ("failed", "interrupted") and row.message:
            out.print(f"{row.job}: {row.message}", markup=False, highlight=False, soft_wrap=True)
    err.print("wrote " + ", ".join(map(str, summary.written)), markup=False, highlight=False)
    return summary


def _interrupt_on_term(number: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _run(args: argparse.Namespace, out: Any, err: Any) -> int:
    from aitune_fp.cli.outputs import CliError

    index = _ran_plan(args, err)
    _show_summary(out, err, args.out)
    failed = [e.job for e in index.entries if e.status not in ("complete", "skipped")]
    if failed:
        raise CliError(
            f"{len(failed)} of {len(index.entries)} jobs did not complete: " + ", ".join(failed)
        )
    return 0


def _ran_plan(args: argparse.Namespace, err: Any) -> Any:
    """The fleet's index after running its plan with a progress view on ``err``; SIGTERM
    interrupts it as Ctrl-C does, and a fleet error is a ``CliError``."""
    from aitune_fp.cli.fleet_progress import FleetProgressView
    from aitune_fp.cli.outputs import CliError
    from aitune_fp.shell.fleet.errors import FleetError
    from aitune_fp.shell.fleet.run_plan import load_plan, run_plan

    options = {k: getattr(args, k) for k in ("executor", "address", "force", "cache_dir")}
    previous = signal.signal(signal.SIGTERM, _interrupt_on_term)
    try:
        plan = load_plan(args.plan)
        with FleetProgressView(err, plan) as view:
            return run_plan(args.plan, args.out, on_event=view, **options)
    except FleetError as error:
        raise CliError(str(error)) from None
    finally:
        signal.signal(signal.SIGTERM, previous)


def fleet(args: argparse.Namespace, out: Any, err: Any) -> int:
    """Run ``fleet run`` or ``fleet report``."""
    if args.fleet_command == "run":
        return _run(args, out, err)
    _show_summary(out, err, args.out)
    return 0
