"""``aitune-fp check``: a speed gate for CI (:mod:`aitune_fp.shell.pick_check`).

Rules:
- ``aitune-fp check DIR`` times a saved pick again on this machine against the figures of
  the ``run.json`` saved with it; ``aitune-fp check RUN.json --module FACTORY`` rebuilds a
  run's pick on the factory's module (which must return ``(module, samples)``) and times
  that; ``--module`` also checks the pick's outputs against the module's (a recipe save
  needs it to load); ``--baseline RUN.json`` compares against that run's figures instead
  (a new build against the last release's); ``--baseline DIR`` (a save) times both picks
  now in interleaved rounds for ``--seconds`` and judges them paired
  (``--baseline-module`` loads a recipe baseline);
- it prints the one-line verdict and exits 0 when the check passed, 1 when the pick is
  slower than the figures beyond ``--margin`` (with confidence) or no longer correct,
  and 1 with one error line when it cannot check (no record, no module for a recipe);
- ``--junit FILE`` writes the verdict as JUnit XML, ``--json FILE`` every figure it used.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from aitune_fp.cli.options import factory_arg, positive_arg, seconds_arg
from aitune_fp.cli.outputs import CliError


def _margin(text: str) -> float:
    """A margin: a fraction ``>= 0`` (``0.1``) or a percentage (``10%``)."""
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a margin: {text!r} (try 0.1 or 10%)") from None
    if not value >= 0.0:
        raise argparse.ArgumentTypeError(f"a margin must be >= 0, got {text!r}")
    return value


def add_check_parser(sub: Any) -> None:
    """Add ``check`` to the command line's subparsers."""
    check = sub.add_parser("check", help="re-measure a saved pick against its recorded figures")
    check.add_argument("target", metavar="DIR|RUN.json", help="a save folder, or a run.json")
    check.add_argument(
        "--module",
        type=factory_arg,
        default=None,
        metavar="FACTORY",
        help="path/to/file.py:factory returning (module, samples)",
    )
    check.add_argument(
        "--baseline",
        default=None,
        metavar="RUN.json",
        help="compare with this run's figures (default: the target's)",
    )
    check.add_argument(
        "--margin",
        type=_margin,
        default=0.10,
        metavar="M",
        help="fail when slower by more, surely (default: 10%%)",
    )
    check.add_argument(
        "--calls",
        type=positive_arg,
        default=100,
        metavar="N",
        help="timed calls of the pick (default: 100)",
    )
    check.add_argument(
        "--baseline-module",
        type=factory_arg,
        default=None,
        metavar="FACTORY",
        help="a baseline recipe save's module (default: --module)",
    )
    check.add_argument(
        "--seconds",
        type=seconds_arg,
        default=5.0,
        metavar="S",
        help="interleaved rounds against a baseline save (default: 5)",
    )
    check.add_argument("--junit", default=None, metavar="FILE", help="write JUnit XML here")
    check.add_argument("--json", default=None, metavar="FILE", help="write the figures here")


def check(args: argparse.Namespace, out: Any, err: Any) -> int:
    """Run the check, print the verdict, write the outputs asked for."""
    from aitune_fp.cli.factory import FactoryError, call_factory
    from aitune_fp.core.report.check_report import check_json, junit_xml
    from aitune_fp.core.verification.gate import verdict_line
    from aitune_fp.shell.pick_check import CheckError, CheckRequest
    from aitune_fp.shell.pick_check import check as run_check

    try:
        module, samples = call_factory(args.module) if args.module else (None, None)
        old = call_factory(args.baseline_module)[0] if args.baseline_module else None
        baseline = Path(args.baseline) if args.baseline else None
        request = CheckRequest(
            Path(args.target), module, samples, baseline, args.margin, args.calls, old, args.seconds
        )
        result = run_check(request)
    except (CheckError, FactoryError) as error:
        raise CliError(str(error)) from None
    out.print(verdict_line(result), markup=False, highlight=False, soft_wrap=True)
    if args.junit:
        Path(args.junit).write_text(junit_xml(result))
    if args.json:
        Path(args.json).write_text(json.dumps(check_json(result), indent=2) + "\n")
    return 0 if result.passed else 1
