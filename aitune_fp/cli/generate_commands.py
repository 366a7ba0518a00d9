"""``aitune-fp tune-generate``: tune a causal language model's generation from a factory.

Rules: the factory returns the model (or ``(model, samples)``; samples are ignored); prompts
are random token ids, one per ``--prompt-lengths`` entry (seeded, reproducible; 32 tokens
when no prompt is given), then each ``--prompt`` text, tokenized by ``--tokenizer`` (a
``file.py:factory`` or a local tokenizer folder); each runs at every ``--batch-sizes``
entry; ``--strategy`` picks by max tokens/s (default), min inter-token latency or min TTFT;
``--ttft-ms``/``--itl-ms`` make it a budget (tokens/s within them; unreachable: the
baseline, and the reason says which budget and by how much); ``--candidates`` limits the
candidates tried. A line per candidate goes to stderr as it is built and checked, then one
per candidate timed (TTFT, ITL, tokens/s at the primary point). The tune's table and its
``Selected``/``Speedup`` lines are printed as ``tune`` prints them (the run record's: HF
``generate`` is the baseline); ``--out DIR`` writes ``run.json``, ``plot.png`` (tokens/s by
batch size, TTFT by prompt length; not with ``--no-plot``) (the run record: ``aitune-fp
report`` and ``reselect --strategy min-ttft`` read it offline) and ``report.md`` (``replay``
reproduces its decisions from its event log). The pick is verified for ``--verify-seconds``
against its runner-up and HF ``generate`` in paired rounds, and the decision is kept in the
decision cache (``--cache-dir``, else the tune's default): an unchanged re-tune replays the
stored session and only re-verifies its pick, unless ``--fresh``
(:mod:`aitune_fp.shell.generation.stored_decision`). A request ``tune_generate`` refuses (a
prompt beyond the model's positions, a model without ``generate``…) is one ``error:`` line,
exit 1. The record (pick, reason, every candidate's TTFT/ITL/tokens/s and accuracy) is
printed and, with ``--save``, written as the sealed folder (``generation.json`` and
``manifest.json``) that ``TunedGenerator.load(path, module=…)``, ``aitune_fp.load`` and
``aitune-fp serve`` read. The factory is called after ``torch.manual_seed(0)``, so a factory
of random weights builds the same ones in every process. ``--remeasure`` (with ``--save``)
loads the save in a fresh Python process over the factory's model, re-measures the pick's
and HF ``generate``'s tokens/s at the primary point (first prompt, first batch size), prints
them beside the tune's and writes them into the save's record under ``"fresh"`` (the folder
is written again, sealed). ``--device`` (cpu, cuda or cuda:N) moves the factory's model
there before the tune; on CUDA every candidate not yet proven on a GPU is recorded as
refused (:mod:`aitune_fp.effects.generation.devices`) and HF ``generate`` is measured.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from aitune_fp.cli.generate_parser import strategy_of
from aitune_fp.cli.outputs import CliError
from aitune_fp.cli.serve_generate import load_tokenizer


def _candidates(names: tuple[str, ...] | None) -> tuple[str, ...] | None:
    from aitune_fp.shell.generation.candidates import BY_NAME, named

    unknown = [n for n in names or () if named(n) is None]
    if unknown:
        raise CliError(f"unknown candidate {unknown[0]!r}; known: {', '.join(BY_NAME)}")
    return names


def _prompts(model: Any, args: argparse.Namespace) -> list[Any]:
    """Random token ids per ``--prompt-lengths`` entry (32 when no prompt is given), then
    the ``--prompt`` texts."""
    import torch

    texts = list(args.prompt or ())
    lengths = args.prompt_lengths or (() if texts else (32,))
    gen = torch.Generator().manual_seed(0)
    config: Any = model.config
    return [torch.randint(0, int(config.vocab_size), (n,), generator=gen) for n in lengths] + texts


def _refuse_model(model: Any) -> None:
    """A :class:`CliError` when the factory's model is no causal LM (no ``generate``, no
    vocabulary), before prompts are drawn from its vocabulary."""
    from aitune_fp.core.generation.request import model_refusal

    vocab = getattr(getattr(model, "config", None), "vocab_size", None)
    problem = model_refusal(callable(getattr(model, "generate", None)), vocab)
    if problem is not None:
        raise CliError(problem)


def _show(record: dict[str, Any], out: Any) -> None:
    out.print(json.dumps({k: v for k, v in record.items() if k != "results"}, indent=2))
    for row in record["results"]:
        out.print(
            f"{row['name']:22} b{row['batch']} L{row['prompt_len']} "
            f"TTFT {row['ttft_ms']:.2f} ms  ITL {row['itl_ms']:.2f} ms  "
            f"{row['tokens_per_s']:.1f} tok/s  top1 {row['top1']:.3f}  {row['failure'] or ''}"
        )


def _model_and_tokenizer(args: argparse.Namespace) -> tuple[Any, Any]:
    import torch

    from aitune_fp.cli.factory import FactoryError, call_factory

    if args.prompt and args.tokenizer is None:
        raise CliError("--prompt needs --tokenizer (file.py:factory or a tokenizer folder)")
    tokenizer = None if args.tokenizer is None else load_tokenizer(args.tokenizer)
    torch.manual_seed(0)  # the same weights in a fresh process (--remeasure)
    try:
        return call_factory(args.factory)[0], tokenizer
    except FactoryError as error:
        raise CliError(str(error)) from None


def tune_generate(args: argparse.Namespace, out: Any, err: Any) -> int:
    """Run ``tune_generate`` on the factory's model and print the record."""
    from aitune_fp.shell.generation.prompts import prompt_ids

    strategy = strategy_of(args)
    _candidates(args.candidates)
    device = _device(args.device)
    if args.remeasure and not args.save:
        raise CliError("--remeasure needs --save FILE (the fresh process loads it)")
    model, tokenizer = _model_and_tokenizer(args)
    _refuse_model(model)
    model = model.to(device)
    prompts = _prompts(model, args)
    tuned = _tuned(args, model, prompts, tokenizer, strategy, err)
    if args.save:
        tuned.save(args.save)
    _show(tuned.record(), out)
    _show_run(args, tuned, strategy, [prompt_ids(p, tokenizer) for p in prompts], (out, err))
    if args.remeasure:
        _remeasure(args, tuned, prompt_ids(prompts[0], tokenizer), out)
    return 0


def _device(name: str) -> Any:
    """The ``--device`` as a torch device; a ``CliError`` when it is not present here."""
    from returns.result import Failure

    from aitune_fp.shell.resolve import resolve_device

    resolved = resolve_device(name)
    if isinstance(resolved, Failure):
        raise CliError(f"--device: {resolved.failure().message}")
    return resolved.unwrap()


def _show_run(
    args: argparse.Namespace, tuned: Any, strategy: Any, ids: list[Any], consoles: Any
) -> None:
    """Print the run's table and its Selected/Speedup lines as ``tune`` does; with ``--out``
    write its ``run.json``, ``report.md`` and (unless ``--no-plot``) ``plot.png``."""
    from aitune_fp.cli.console import show_run
    from aitune_fp.cli.outputs import write_run
    from aitune_fp.core.generation.run_record import GenerationRun
    from aitune_fp.shell.generation.outputs import run_record

    lengths = tuple(int(i.shape[1]) for i in ids)
    name, sizes = type(tuned.model).__name__, tuple(args.batch_sizes)
    facts = GenerationRun(name, str(args.device), lengths, sizes, args.new_tokens, {})
    record = run_record(tuned, strategy, facts)
    show_run(consoles[0], record)
    if args.out:
        _, written = write_run(record, args.out, consoles[1], plot=not args.no_plot)
        consoles[1].print("written: " + ", ".join(str(p) for p in written))


def _tuned(
    args: argparse.Namespace,
    model: Any,
    prompts: list[Any],
    tokenizer: Any,
    strategy: Any,
    err: Any,
) -> Any:
    """The tuned generator, or a :class:`CliError` with ``tune_generate``'s one-line refusal."""
    from returns.pipeline import is_successful

    from aitune_fp.shell.generation.tune_generate import tune_generate as tune
    from aitune_fp.shell.io import perform
    from aitune_fp.shell.resolve import default_cache_dir

    cache = args.cache_dir or default_cache_dir()
    made = perform(
        tune(
            model,
            prompts,
            new_tokens=args.new_tokens,
            tokenizer=tokenizer,
            batch_sizes=args.batch_sizes,
            strategy=strategy,
            candidates=args.candidates,
            progress=lambda line: err.print(line, markup=False, highlight=False),
            verify_seconds=args.verify_seconds,
            cache_dir=cache,
            fresh=args.fresh,
        )
    )
    if not is_successful(made):
        raise CliError(made.failure().message)
    return made.unwrap()


def _remeasure(args: argparse.Namespace, tuned: Any, prompt: Any, out: Any) -> None:
    """Re-measure the save in a fresh process at the primary point; print both figures and
    add the fresh ones to the save."""
    from aitune_fp.shell.generation.fresh import fresh_measure, tune_figures

    ids = prompt.repeat(args.batch_sizes[0], 1)
    target = {"target": args.factory}
    fresh = fresh_measure(
        args.save, "aitune_fp.cli.factory:call_target", ids, args.new_tokens, kwargs=target
    )
    tune, again = tune_figures(tuned, *ids.shape), fresh.summary()
    out.print(f"tokens/s of {fresh.pick} and HF generate at b{fresh.batch} L{fresh.prompt_len}:")
    for label, got in (("tune", tune), ("fresh process", again)):
        out.print(
            f"  {label}: {got['tokens_per_s']:.1f} vs {got['hf_tokens_per_s']:.1f} "
            f"({got['speedup']:.2f}x)"
        )
    figures = {"batch": fresh.batch, "prompt_len": fresh.prompt_len, **again}
    tuned.with_fresh(figures).save(args.save)
