"""The command line's precision options: ``--search``, ``--precision``, ``--max-drop``.

Rules:
- ``--search default|wide|none`` picks the candidate space (default: ``default``);
  ``--precision fp32,bf16,int8`` narrows it to those precisions; both go to
  ``TuneOptions(search=...)`` (:mod:`aitune_fp.shell.variants`); ``--min-top1 97%`` sets
  the default policy's top-1 agreement bound (``TuneOptions(accuracy=...)``);
- ``--max-drop 0.5%`` (``tune``, ``demo`` and ``reselect``) wraps the strategy in
  :func:`~aitune_fp.core.strategies.within_accuracy.within_accuracy`: candidates whose
  recorded accuracy drop is larger are refused; ``reselect`` does it offline, from the
  figures in run.json, on the stored strategy unless ``--strategy`` names another.
"""

from __future__ import annotations

import argparse
from typing import Any

from aitune_fp.cli.options import _usage
from aitune_fp.core.accuracy.search import LEVELS, parse_precisions
from aitune_fp.core.strategies.within_accuracy import parse_max_drop, within_accuracy
from aitune_fp.core.strategy import Strategy

precisions_arg = _usage(parse_precisions)
max_drop_arg = _usage(parse_max_drop)


def add_max_drop(parser: argparse.ArgumentParser) -> None:
    """``--max-drop``: the largest accuracy drop a pick may have (fraction or percent)."""
    parser.add_argument(
        "--max-drop",
        type=max_drop_arg,
        default=None,
        metavar="DROP",
        help="refuse candidates whose accuracy drop against eager exceeds DROP (0.5%% or "
        "0.005): 1 - top-1 agreement for classifier outputs, else RMS relative error",
    )


def add_precision_options(parser: argparse.ArgumentParser) -> None:
    """``--search``, ``--precision`` and ``--max-drop`` for ``tune`` and ``demo``."""
    parser.add_argument(
        "--search",
        choices=LEVELS,
        default="default",
        help="candidate space: none (fp32 backends only), default (plus the reduced-"
        "precision variants that pay off here), wide (every variant; slower to tune)",
    )
    parser.add_argument(
        "--precision",
        "--precisions",
        type=precisions_arg,
        default=None,
        metavar="LIST",
        help="keep only candidates computing in these precisions: fp32,bf16,fp16,int8 (one "
        "this machine does not compute natively is then built anyway, with a warning)",
    )
    _add_accuracy_options(parser)


def _add_accuracy_options(parser: argparse.ArgumentParser) -> None:
    """``--min-top1`` and ``--max-drop``: how much accuracy reduced precision may give up."""
    parser.add_argument(
        "--min-top1",
        type=max_drop_arg,
        default=None,
        metavar="AGREEMENT",
        help="the top-1 agreement with eager a reduced-precision candidate with classifier-"
        "like outputs must keep (99%% or 0.99; default 99%%)",
    )
    add_max_drop(parser)


def search_of(args: argparse.Namespace) -> dict[str, Any]:
    """``TuneOptions``' ``search`` (and ``accuracy`` with ``--min-top1``) from the parsed
    options (empty when absent)."""
    if not hasattr(args, "search"):
        return {}
    from aitune_fp.core.accuracy import AccuracyPolicy, Search

    chosen: dict[str, Any] = {"search": Search(args.search, getattr(args, "precision", None))}
    if getattr(args, "min_top1", None) is not None:
        chosen["accuracy"] = AccuracyPolicy(min_top1=args.min_top1)
    return chosen


def bounded(strategy: Strategy, args: argparse.Namespace) -> Strategy:
    """``strategy`` within ``--max-drop`` when given."""
    drop = getattr(args, "max_drop", None)
    return strategy if drop is None else within_accuracy(drop, strategy)


def check_reselect(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """``reselect`` needs ``--strategy``, ``--max-drop`` or both (a usage error, exit 2)."""
    if args.command == "reselect" and args.strategy is None and args.max_drop is None:
        parser.error("reselect needs --strategy, --max-drop or both")
