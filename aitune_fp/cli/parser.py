"""The argument parser of every command (``aitune-fp COMMAND --help``).

Rules: without ``--strategy``, ``demo`` and ``tune`` decide with the confident comparison
(:data:`DEFAULT_STRATEGY`) and verify the pick for :data:`DEFAULT_VERIFY_SECONDS`; building
the parser imports no torch (the ``fleet`` and ``serve`` commands add their own parsers).

Longer than 260 lines: every command's options in one place, so their help texts and
defaults are read and changed together.
"""

from __future__ import annotations

import argparse
from typing import TypeAlias

from aitune_fp.cli.isolation_options import add_isolation_options
from aitune_fp.cli.options import (
    DTYPES,
    device_arg,
    dtype_arg,
    dynamic_arg,
    factory_arg,
    names_arg,
    off_or_seconds_arg,
    positive_arg,
    shape_arg,
    strategy_arg,
)
from aitune_fp.cli.precision_options import add_max_drop, add_precision_options
from aitune_fp.core.strategies.registry import STRATEGY_SPECS, parse_strategy

PROG = "aitune-fp"
DEMO_CHOICES = ("mlp", "cnn", "transformer", "all")
DEFAULT_STRATEGY = "confident:max-throughput"
Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
DEFAULT_VERIFY_SECONDS = 3.0  # ~1000 paired rounds at 1 ms a call; see docs/decision-quality.md


def _tuning_options(parser: argparse.ArgumentParser) -> None:
    """Options shared by ``demo`` and ``tune``.

    Without ``--strategy`` they decide with the confident comparison
    (:data:`DEFAULT_STRATEGY`); ``--strategy max-throughput`` is the plain rule.
    """
    _selection_options(parser)
    _place_options(parser)
    _verify_options(parser)
    add_isolation_options(parser)
    add_precision_options(parser)


def _escaped(text: str) -> str:
    """``text`` as an argparse help string: its ``%`` doubled (argparse formats help with
    ``%``, so a strategy example such as ``within-accuracy=0.5%:<spec>`` would break ``--help``).

    >>> _escaped("within-accuracy=0.5%:<spec>")
    'within-accuracy=0.5%%:<spec>'
    """
    return text.replace("%", "%%")


def _selection_options(parser: argparse.ArgumentParser) -> None:
    """What is tuned: the strategy, the backends, the device."""
    parser.add_argument(
        "--strategy",
        type=strategy_arg,
        default=parse_strategy(DEFAULT_STRATEGY),
        metavar="SPEC",
        help=_escaped(
            f"selection strategy: {', '.join(STRATEGY_SPECS)} (default: {DEFAULT_STRATEGY})"
        ),
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


def _place_options(parser: argparse.ArgumentParser) -> None:
    """How large and where: the batch-size bound, the cache folder, the plot."""
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


def _verify_options(parser: argparse.ArgumentParser) -> None:
    """The verification of the pick and the reuse of an earlier baseline."""
    parser.add_argument(
        "--verify-seconds",
        type=off_or_seconds_arg,
        default=DEFAULT_VERIFY_SECONDS,
        metavar="N",
        help="re-measure the pick against its runner-ups, interleaved, after selection: "
        "until the evidence decides, for about N seconds, up to 3N while a runner-up leans "
        f"beyond the margin; 0: off (default: {DEFAULT_VERIFY_SECONDS:g})",
    )
    _earlier_run_options(parser)


def _earlier_run_options(parser: argparse.ArgumentParser) -> None:
    """What an earlier run may spare: its eager baseline, its stored decision."""
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
        "--fresh",
        action="store_true",
        help="tune in full even when a stored decision matches this model, samples, "
        "environment, device, strategy, policy and candidates (by default such a re-tune "
        "only re-verifies the stored pick against its runner-up)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every command."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Find the fastest correct way to run a PyTorch model for inference.",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in (_add_demo, _add_tune, _add_report, _add_load, _add_reselect, _add_replay, _gen):
        add(sub)
    _add_in_own_modules(sub)
    return parser


def _add_in_own_modules(sub: Commands) -> None:
    """The commands whose parsers live with them: ``fleet``, ``serve``/``export``,
    ``service``, ``check`` (imported only when the parser is built)."""
    from aitune_fp.cli.fleet_commands import add_fleet_parser

    add_fleet_parser(sub)
    from aitune_fp.cli.serve_commands import add_serve_parsers

    add_serve_parsers(sub)
    from aitune_fp.cli.service_commands import add_service_parser

    add_service_parser(sub)
    from aitune_fp.cli.check_commands import add_check_parser

    add_check_parser(sub)


def _gen(sub: Commands) -> None:
    from aitune_fp.cli.generate_parser import add_generate_parser

    add_generate_parser(sub)


def _add_demo(sub: Commands) -> None:
    """``demo``: tune the embedded demo models."""
    demo = sub.add_parser("demo", help="tune the embedded demo models (the main job)")
    demo.add_argument("--model", choices=DEMO_CHOICES, default="all", help="default: all")
    demo.add_argument("--out", default="runs/demo", metavar="DIR", help="default: runs/demo")
    _tuning_options(demo)


def _add_tune(sub: Commands) -> None:
    """``tune``: a model of the user's from a factory, with its inputs' shapes and dtypes."""
    tune = sub.add_parser("tune", help="tune your own model from a factory")
    tune.add_argument(
        "factory",
        type=factory_arg,
        help="path/to/file.py:factory returning the module, or (module, samples)",
    )
    _synthetic_options(tune)
    _input_options(tune)
    tune.add_argument("--name", default=None, help="model name in the report (default: factory)")
    tune.add_argument("--out", default="runs/tune", metavar="DIR", help="default: runs/tune")
    tune.add_argument("--save", default=None, metavar="DIR", help="also save the tuned module")
    _tuning_options(tune)


def _synthetic_options(tune: argparse.ArgumentParser) -> None:
    """``tune``'s options for synthetic samples: each input's shape and dtype."""
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


def _input_options(tune: argparse.ArgumentParser) -> None:
    """``tune``'s options on the samples: unbatched items and dynamic axes."""
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


def _add_report(sub: Commands) -> None:
    """``report``: show a stored run."""
    report = sub.add_parser("report", help="show a stored run")
    report.add_argument("run", metavar="RUN.json")
    report.add_argument("--markdown", action="store_true", help="print the Markdown report")
    report.add_argument("--plot", default=None, metavar="FILE.png", help="draw the plot")
    report.add_argument(
        "--stats",
        action="store_true",
        help="also print the decision's statistics: intervals and per-backend spread",
    )


def _add_load(sub: Commands) -> None:
    """``load``: check and load a saved tuned module."""
    load = sub.add_parser("load", help="check and load a saved tuned module, run it once")
    load.add_argument("saved", metavar="DIR", help="a folder written by --save")
    load.add_argument(
        "--expected-digest",
        default=None,
        metavar="sha256:HEX",
        help="refuse the folder unless its manifest has this digest (printed by --save)",
    )
    load.add_argument("--device", type=device_arg, default=None, help="default: as tuned")


def _add_reselect(sub: Commands) -> None:
    """``reselect``: re-select a stored run with another strategy."""
    reselect = sub.add_parser("reselect", help="re-select a stored run with another strategy")
    reselect.add_argument("run", metavar="RUN.json")
    reselect.add_argument(
        "--strategy",
        type=strategy_arg,
        default=None,
        metavar="SPEC",
        help="the strategy to re-select with (default with --max-drop: the stored one)",
    )
    add_max_drop(reselect)
    reselect.add_argument("--out", default=None, metavar="NEW.json", help="store the new run")


def _add_replay(sub: Commands) -> None:
    """``replay``: re-derive a stored run's decisions from its event log."""
    replay = sub.add_parser("replay", help="re-derive a stored run's decisions from its log")
    replay.add_argument("run", metavar="RUN.json")
    replay.add_argument(
        "--strategy",
        type=strategy_arg,
        default=None,
        metavar="SPEC",
        help="replay under another strategy: where would it diverge?",
    )
