"""``aitune-fp tune-generate``'s command line: its options and the strategy they name.

Rules: ``--strategy`` names max tokens/s (default), min inter-token latency, min TTFT or a
budget; ``--ttft-ms``/``--itl-ms`` make it a budget (and refuse any other named strategy);
lists are comma-separated (``--prompt-lengths 32,256``, ``--candidates a,b``); the command
itself is :mod:`aitune_fp.cli.generate_commands`.
"""

from __future__ import annotations

import argparse
from typing import Any

from aitune_fp.cli.options import device_arg, factory_arg
from aitune_fp.cli.outputs import CliError

STRATEGIES = ("max-tokens-per-s", "min-itl", "min-ttft", "budget")


def _ints(text: str) -> tuple[int, ...]:
    values = tuple(int(v) for v in text.split(",") if v.strip())
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers like 32,256, got {text!r}")
    return values


def _names(text: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in text.split(",") if v.strip())


def _prompt_options(gen: argparse.ArgumentParser) -> None:
    gen.add_argument("--prompt-lengths", type=_ints, default=None, metavar="L,L")
    gen.add_argument(
        "--prompt", action="append", default=None, metavar="TEXT", help="a text prompt (repeat)"
    )
    gen.add_argument(
        "--tokenizer", default=None, metavar="FACTORY|DIR", help="tokenizes --prompt texts"
    )
    gen.add_argument("--batch-sizes", type=_ints, default=(1,), metavar="B,B")
    gen.add_argument("--new-tokens", type=int, default=64, metavar="N")


def add_generate_parser(sub: Any) -> None:
    """Add ``tune-generate`` to the command line's subparsers."""
    gen = sub.add_parser("tune-generate", help="tune a causal LM's prefill and decode")
    gen.add_argument("factory", type=factory_arg, metavar="FACTORY", help="path/to/file.py:factory")
    _prompt_options(gen)
    gen.add_argument(
        "--strategy", choices=STRATEGIES, default=None, help="default: max-tokens-per-s"
    )
    gen.add_argument("--ttft-ms", type=float, default=None, metavar="MS", help="TTFT budget")
    gen.add_argument("--itl-ms", type=float, default=None, metavar="MS", help="ITL budget")
    gen.add_argument(
        "--candidates", type=_names, default=None, metavar="NAME,NAME", help="default: all"
    )
    gen.add_argument(
        "--device", type=device_arg, default="cpu", help="cpu, cuda or cuda:N (default: cpu)"
    )
    gen.add_argument("--save", default=None, metavar="FILE", help="write the pick (JSON)")
    gen.add_argument(
        "--remeasure", action="store_true", help="re-measure the saved pick in a fresh process"
    )
    gen.add_argument(
        "--out", default=None, metavar="DIR", help="write run.json, report.md and plot.png"
    )
    gen.add_argument("--no-plot", action="store_true", help="do not draw plot.png")
    gen.add_argument(
        "--verify-seconds",
        type=float,
        default=3.0,
        metavar="N",
        help="paired rounds of the pick, its runner-up and HF generate (0: off; default: 3)",
    )
    gen.add_argument(
        "--cache-dir",
        default=None,
        metavar="DIR",
        help="decision cache (default: $AITUNE_FP_CACHE or ~/.cache/aitune_fp)",
    )
    gen.add_argument(
        "--fresh",
        action="store_true",
        help="tune in full even when a stored decision matches (by default an unchanged "
        "re-tune only re-verifies the stored pick against its runner-up and HF generate)",
    )


def strategy_of(args: argparse.Namespace) -> Any:
    """The generation strategy the options name (a budget when a budget is given)."""
    from aitune_fp.core.generation import generation_budget, max_tokens_per_s, min_itl, min_ttft

    budget = args.ttft_ms is not None or args.itl_ms is not None
    name = args.strategy or ("budget" if budget else "max-tokens-per-s")
    if name == "budget":
        if not budget:
            raise CliError("--strategy budget needs --ttft-ms and/or --itl-ms")
        return generation_budget(ttft_ms=args.ttft_ms, itl_ms=args.itl_ms)
    if budget:
        raise CliError(f"--ttft-ms/--itl-ms make a budget: drop --strategy {name}")
    return {"max-tokens-per-s": max_tokens_per_s, "min-itl": min_itl, "min-ttft": min_ttft}[name]
