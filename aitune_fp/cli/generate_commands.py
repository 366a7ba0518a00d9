"""``aitune-fp tune-generate``: tune a causal language model's generation from a factory.

Rules: the factory returns the model (or ``(model, samples)``; samples are ignored); prompts
are random token ids, one per ``--prompt-lengths`` entry (seeded, reproducible); the record
(pick, reason, every candidate's TTFT/ITL/tokens/s and accuracy) is printed and, with
``--save``, written as the JSON that ``TunedGenerator.load(path, module=…)`` reads.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from aitune_fp.cli.options import factory_arg


def _ints(text: str) -> tuple[int, ...]:
    values = tuple(int(v) for v in text.split(",") if v.strip())
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers like 32,256, got {text!r}")
    return values


def add_generate_parser(sub: Any) -> None:
    """Add ``tune-generate`` to the command line's subparsers."""
    gen = sub.add_parser("tune-generate", help="tune a causal LM's prefill and decode")
    gen.add_argument("factory", type=factory_arg, metavar="FACTORY", help="path/to/file.py:factory")
    gen.add_argument("--prompt-lengths", type=_ints, default=(32,), metavar="L,L")
    gen.add_argument("--batch-sizes", type=_ints, default=(1,), metavar="B,B")
    gen.add_argument("--new-tokens", type=int, default=64, metavar="N")
    gen.add_argument("--save", default=None, metavar="FILE", help="write the pick (JSON)")


def _prompts(model: Any, lengths: tuple[int, ...]) -> list[Any]:
    import torch

    gen = torch.Generator().manual_seed(0)
    config: Any = model.config
    return [torch.randint(0, int(config.vocab_size), (n,), generator=gen) for n in lengths]


def _show(record: dict[str, Any], out: Any) -> None:
    out.print(json.dumps({k: v for k, v in record.items() if k != "results"}, indent=2))
    for row in record["results"]:
        out.print(
            f"{row['name']:22} b{row['batch']} L{row['prompt_len']} "
            f"TTFT {row['ttft_ms']:.2f} ms  ITL {row['itl_ms']:.2f} ms  "
            f"{row['tokens_per_s']:.1f} tok/s  top1 {row['top1']:.3f}  {row['failure'] or ''}"
        )


def tune_generate(args: argparse.Namespace, out: Any, err: Any) -> int:
    """Run ``tune_generate`` on the factory's model and print the record."""
    from aitune_fp.cli.factory import call_factory
    from aitune_fp.shell.generation.tune_generate import tune_generate as tune

    model, _ = call_factory(args.factory)
    prompts = _prompts(model, args.prompt_lengths)
    tuned = tune(model, prompts, new_tokens=args.new_tokens, batch_sizes=args.batch_sizes)
    if args.save:
        tuned.save(args.save)
    _show(tuned.record(), out)
    return 0
