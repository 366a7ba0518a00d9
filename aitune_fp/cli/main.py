"""``aitune-fp``: the command line (also ``python -m aitune_fp``).

Commands: ``demo``, ``tune``, ``report``, ``reselect``, ``replay``, ``fleet``, ``serve``, ``export``
(``aitune-fp COMMAND --help``).

Rules:
- exit codes: 0 when the command did its job (for ``demo``, ``tune`` and ``reselect``: a
  backend was selected), 1 with one line ``aitune-fp: error: …`` when it could not, 2 for a
  usage error (argparse's message, and an ``--out`` or ``--cache-dir`` that is not a
  folder or cannot be written, found before any work), 130 when interrupted (Ctrl-C) and
  143 when terminated (SIGTERM), after saying where the partial run record is;
- the user never sees a traceback unless they ask for one with ``--debug`` (which also
  prints the library's log lines): an unexpected exception is one line naming its type;
- off a terminal (pipes, logs) output is plain text 160 columns wide unless ``$COLUMNS``
  says otherwise;
- commands that only read a stored run (``report``, ``reselect``, ``replay``) never
  import torch.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from aitune_fp.cli.options import (
    DTYPES,
    device_arg,
    dtype_arg,
    dynamic_arg,
    factory_arg,
    names_arg,
    off_or_seconds_arg,
    positive_arg,
    seconds_arg,
    shape_arg,
    strategy_arg,
)
from aitune_fp.cli.precision_options import add_max_drop, add_precision_options, check_reselect
from aitune_fp.core.strategies.registry import STRATEGY_SPECS, parse_strategy

DEFAULT_BUILD_TIMEOUT = 600.0  # aitune_fp.effects.isolation.protocol (not imported: no torch)
DEFAULT_CALL_TIMEOUT = 60.0

PROG = "aitune-fp"
DEMO_CHOICES = ("mlp", "cnn", "transformer", "all")
PIPE_WIDTH = 160
DEFAULT_STRATEGY = "confident:max-throughput"
DEFAULT_VERIFY_SECONDS = 3.0  # ~1000 paired rounds at 1 ms a call; see docs/decision-quality.md
Command = Callable[[argparse.Namespace, Any, Any], int]


def _tuning_options(parser: argparse.ArgumentParser) -> None:
    """Options shared by ``demo`` and ``tune``.

    Without ``--strategy`` they decide with the confident comparison
    (:data:`DEFAULT_STRATEGY`); ``--strategy max-throughput`` is the plain rule.
    """
    parser.add_argument(
        "--strategy",
        type=strategy_arg,
        default=parse_strategy(DEFAULT_STRATEGY),
        metavar="SPEC",
        help=f"selection strategy: {', '.join(STRATEGY_SPECS)} (default: {DEFAULT_STRATEGY})",
    )
    parser.add_argument(
        "--backends",
        type=names_arg,
        default=None,
        metavar="NAMES",
        help="comma-separated backend names (default: every backend available on the device)",
    )
    parser.add_argument(
        "--device", type=device_arg, default="cpu", help="cpu, cuda or cuda:N (default: cpu)"
    )
    parser.add_argument(
        "--max-batch-size",
        type=positive_arg,
        default=None,
        metavar="N",
        help="largest batch size to profile (default: found by sweeping eager)",
    )
    parser.add_argument(
        "--cache-dir",
        default=None,
        metavar="DIR",
        help="build folders and artifact cache (default: $AITUNE_FP_CACHE or ~/.cache/aitune_fp)",
    )
    parser.add_argument("--no-plot", action="store_true", help="do not draw plot.png")
    parser.add_argument(
        "--verify-seconds",
        type=off_or_seconds_arg,
        default=DEFAULT_VERIFY_SECONDS,
        metavar="N",
        help="re-measure the pick against its runner-ups, interleaved, after selection: "
        "until the evidence decides, for about N seconds, up to 3N while a runner-up leans "
        f"beyond the margin; 0: off (default: {DEFAULT_VERIFY_SECONDS:g})",
    )
    parser.add_argument(
        "--reuse-baseline",
        default=None,
        metavar="RUN_JSON",
        help="take the eager baseline's profile from this earlier run.json instead of "
        "profiling eager again, only if its model (code and weights), inputs, batch sizes, "
        "profiling plan and settings, environment and device all match; otherwise a warning "
        "names what differs and the baseline is measured as usual",
    )
    parser.add_argument(
        "--build-timeout",
        type=seconds_arg,
        default=DEFAULT_BUILD_TIMEOUT,
        metavar="SECONDS",
        help=f"a build, export or compile running longer fails that backend "
        f"(default: {DEFAULT_BUILD_TIMEOUT:g})",
    )
    parser.add_argument(
        "--call-timeout",
        type=seconds_arg,
        default=DEFAULT_CALL_TIMEOUT,
        metavar="SECONDS",
        help=f"one call that does not return in time fails that backend "
        f"(default: {DEFAULT_CALL_TIMEOUT:g})",
    )
    parser.add_argument(
        "--no-isolation",
        action="store_true",
        help="build and profile every backend in this process (for debugging: a crash or "
        "hang then ends the whole run)",
    )
    add_precision_options(parser)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every command."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Find the fastest correct way to run a PyTorch model for inference.",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = sub.add_parser("demo", help="tune the embedded demo models (the main job)")
    demo.add_argument("--model", choices=DEMO_CHOICES, default="all", help="default: all")
    demo.add_argument("--out", default="runs/demo", metavar="DIR", help="default: runs/demo")
    _tuning_options(demo)

    tune = sub.add_parser("tune", help="tune your own model from a factory")
    tune.add_argument(
        "factory",
        type=factory_arg,
        help="path/to/file.py:factory returning the module, or (module, samples)",
    )
    tune.add_argument(
        "--input-shape",
        type=shape_arg,
        action="append",
        metavar="SHAPE",
        help="shape of one positional input, batch first, e.g. 8x3x64x64 (repeat per input)",
    )
    tune.add_argument(
        "--dtype",
        type=dtype_arg,
        action="append",
        metavar="DTYPE",
        help=f"input dtype, one for all or one per input: {', '.join(DTYPES)}",
    )
    tune.add_argument(
        "--unbatched",
        action="store_true",
        help="the factory's samples are items without a batch axis (collated by tuning)",
    )
    tune.add_argument(
        "--dynamic",
        type=dynamic_arg,
        action="append",
        metavar="INPUT:AXIS=MIN..MAX",
        help="a dynamic axis besides the batch, e.g. input_ids:1=8..64 or 0:2=16..64,3=16..64 "
        "(INPUT: keyword name or positional index; inclusive range; repeat per input)",
    )
    tune.add_argument("--name", default=None, help="model name in the report (default: factory)")
    tune.add_argument("--out", default="runs/tune", metavar="DIR", help="default: runs/tune")
    tune.add_argument("--save", default=None, metavar="DIR", help="also save the tuned module")
    _tuning_options(tune)

    report = sub.add_parser("report", help="show a stored run")
    report.add_argument("run", metavar="RUN.json")
    report.add_argument("--markdown", action="store_true", help="print the Markdown report")
    report.add_argument("--plot", default=None, metavar="FILE.png", help="draw the plot")
    report.add_argument(
        "--stats",
        action="store_true",
        help="also print the decision's statistics: intervals and per-backend spread",
    )

    load = sub.add_parser("load", help="check and load a saved tuned module, run it once")
    load.add_argument("saved", metavar="DIR", help="a folder written by --save")
    load.add_argument(
        "--expected-digest",
        default=None,
        metavar="sha256:HEX",
        help="refuse the folder unless its manifest has this digest (printed by --save)",
    )
    load.add_argument("--device", type=device_arg, default=None, help="default: as tuned")

    reselect = sub.add_parser("reselect", help="re-select a stored run with another strategy")
    reselect.add_argument("run", metavar="RUN.json")
    reselect.add_argument(
        "--strategy", type=strategy_arg, default=None, metavar="SPEC",
        help="the strategy to re-select with (default with --max-drop: the stored one)",
    )  # fmt: skip
    add_max_drop(reselect)
    reselect.add_argument("--out", default=None, metavar="NEW.json", help="store the new run")
    replay = sub.add_parser("replay", help="re-derive a stored run's decisions from its log")
    replay.add_argument("run", metavar="RUN.json")
    replay.add_argument("--strategy", type=strategy_arg, default=None, metavar="SPEC",
                        help="replay under another strategy: where would it diverge?")  # fmt: skip
    from aitune_fp.cli.fleet_commands import add_fleet_parser

    add_fleet_parser(sub)
    from aitune_fp.cli.serve_commands import add_serve_parsers

    add_serve_parsers(sub)
    return parser


def _command(name: str) -> Command:
    """The function running command ``name`` (imported on demand)."""
    if name in ("demo", "tune", "load"):
        from aitune_fp.cli import tune_commands as module
    elif name == "fleet":
        from aitune_fp.cli import fleet_commands as module  # type: ignore[no-redef]
    elif name in ("serve", "export"):
        from aitune_fp.cli import serve_commands as module  # type: ignore[no-redef]
    else:
        from aitune_fp.cli import record_commands as module  # type: ignore[no-redef]
    return getattr(module, name)  # type: ignore[no-any-return]


def _check_backends(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """A usage error for a backend name the registry does not know, or for an empty list."""
    if getattr(args, "backends", None) == ():
        parser.error("argument --backends: no backend named; give at least one, e.g. onnxruntime")
    if not getattr(args, "backends", None):
        return
    from aitune_fp.effects.backends.registry import backend_by_name

    for name in args.backends:
        try:
            backend_by_name(name)
        except (KeyError, ValueError) as error:
            message = error.args[0] if error.args else str(error)
            parser.error(f"argument --backends: {message}")


def _check_locations(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """A usage error for an ``--out`` or ``--cache-dir`` that cannot hold our files."""
    from aitune_fp.cli.outputs import folder_problem

    if args.command not in ("demo", "tune"):
        return
    problem = folder_problem(args.out, "--out")
    cache = Path(args.cache_dir) if args.cache_dir is not None else None
    if problem is None and cache is not None and cache.exists() and not cache.is_dir():
        problem = f"--cache-dir {cache} exists and is not a folder"
    if problem is not None:
        parser.error(problem)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread so that the run ends as cleanly as on Ctrl-C."""


def _on_sigterm(signum: int, frame: Any) -> None:
    raise Terminated()


def _consoles(console: Any) -> tuple[Any, Any]:
    """stdout and stderr consoles; off a terminal, tables get 160 columns unless $COLUMNS."""
    width = None if "COLUMNS" in os.environ else PIPE_WIDTH
    out, err = console(), console(stderr=True)
    if not out.is_terminal:
        out = console(width=width)
    if not err.is_terminal:
        err = console(stderr=True, width=width)
    return out, err


def _logging(*, debug: bool) -> None:
    """Library log lines go to stderr with ``--debug``; otherwise the progress view says it."""
    logger = logging.getLogger("aitune_fp")
    if debug:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
    elif not logger.handlers:
        logger.addHandler(logging.NullHandler())


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    try:
        from rich.console import Console
    except ImportError:
        print(f"{PROG}: error: the CLI needs rich: pip install 'aitune_fp[cli]'", file=sys.stderr)
        return 1
    from aitune_fp.cli.head_start import head_start
    from aitune_fp.cli.outputs import CliError
    from aitune_fp.shell.wall_clock import count_from_process_start

    parser = build_parser()
    args = parser.parse_args(argv)
    if argv is None:  # a process started for this command: its wall counts from its start
        count_from_process_start()
        head_start(args)  # the workers' server imports while this process does
    _logging(debug=args.debug)
    out, err = _consoles(Console)
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        _check_backends(parser, args)
        _check_locations(parser, args)
        check_reselect(parser, args)
        return _command(args.command)(args, out, err)
    except CliError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 1
    except Terminated:
        print(f"{PROG}: terminated (SIGTERM)", file=sys.stderr)
        return 143
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except Exception as error:
        if args.debug:
            raise
        first = str(error).strip().splitlines()[0] if str(error).strip() else ""
        print(
            f"{PROG}: error: unexpected {type(error).__name__}: {first} (rerun with --debug)",
            file=sys.stderr,
        )
        return 1
    finally:
        signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
