"""The best fp32 pick against the best pick of the default precision search, side by side.

Prints figures only (no pass/fail). Each model is tuned twice in this process, each time
with a fresh artifact cache: once with ``search="none"`` (today's fp32 candidates) and
once with ``search="default"`` (plus the reduced-precision variants the device offers,
judged by the default accuracy policy). Per model it prints both picks, their throughput,
the default pick's speedup over the best fp32 candidate *of the same tune* (one
measurement window; the cross-tune ratio is printed too), the pick's error figures, the
variants refused and why, and both tune wall times with their ratio.

Models: the demo models (``mlp``, ``cnn``, ``transformer``) and ``bert``: a BERT
classifier built from a ``transformers`` config (hidden 256, 4 layers, 4 heads, sequence
64, 10 labels, random weights), tuned up to batch 16.

    python benchmarks/precision.py [--models mlp,cnn,transformer,bert] [--search default]
                                   [--strategy confident:max-throughput]
"""

from __future__ import annotations

import argparse
import logging
import tempfile
import time
from typing import Any

import torch

from aitune_fp.core.record.run_record import RunRecord
from aitune_fp.core.report.accuracy import figures_text as summary
from aitune_fp.core.strategies.registry import parse_strategy, strategy_from_config
from aitune_fp.models import DEMO_MODELS
from aitune_fp.shell.io import perform
from aitune_fp.shell.tune_module import TuneOptions, TuningRun, run_tuning


class BertLogits(torch.nn.Module):
    """A ``transformers`` BERT classifier from a config, called with ``input_ids``."""

    def __init__(self) -> None:
        super().__init__()
        import transformers

        options: dict[str, Any] = {
            "hidden_size": 256,
            "num_hidden_layers": 4,
            "num_attention_heads": 4,
            "intermediate_size": 1024,
            "num_labels": 10,
        }
        torch.manual_seed(0)
        model: Any = transformers.BertForSequenceClassification(transformers.BertConfig(**options))
        self.model = model.eval()

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        """The classifier's logits."""
        return self.model(input_ids=input_ids).logits  # type: ignore[no-any-return]


def _model(name: str) -> tuple[torch.nn.Module, Any, int | None]:
    if name == "bert":
        g = torch.Generator().manual_seed(1)
        samples = [torch.randint(0, 30522, (4, 64), generator=g) for _ in range(4)]
        return BertLogits(), samples, 16
    demo = DEMO_MODELS[name]
    return demo.build(), demo.samples(), None


def _tune(name: str, search: str, strategy: str) -> tuple[TuningRun, float]:
    module, samples, cap = _model(name)
    start = time.perf_counter()
    run = perform(
        run_tuning(
            module,
            samples,
            parse_strategy(strategy),
            options=TuneOptions(
                cache_dir=tempfile.mkdtemp(prefix="aitune-precision-"),
                model_name=name,
                max_batch_size=cap,
                search=search,
            ),
        )
    ).unwrap()
    return run, time.perf_counter() - start


def _throughputs(record: RunRecord) -> dict[str, tuple[float, int]]:
    """Each profiled candidate's throughput (samples/s) and batch size, as the run's own
    strategy measures it (the figure its decision compared)."""
    measure = strategy_from_config(record.strategy).measure
    best: dict[str, tuple[float, int]] = {}
    for outcome in record.outcomes:
        if outcome.profile is not None:
            result = measure(outcome.profile).value_or(None)
            if result is not None:
                best[outcome.backend] = (result.throughput, result.selected_batch_size)
    return best


def _pick(record: RunRecord) -> str:
    return record.selection.backend if record.selection is not None else "(none)"


def _report(name: str, fp32: tuple[TuningRun, float], wide: tuple[TuningRun, float]) -> None:
    (plain, plain_s), (searched, searched_s) = fp32, wide
    rates = _throughputs(searched.record)
    fp32_names = {o.backend for o in plain.record.outcomes}
    best_fp32 = max((r for n, r in rates.items() if n in fp32_names), default=(0.0, 0))
    pick = _pick(searched.record)
    pick_rate = rates.get(pick, (0.0, 0))
    cross = _throughputs(plain.record).get(_pick(plain.record), (0.0, 0))[0]
    print(f"\n== {name}")
    print(f"fp32 pick     {_pick(plain.record):40s} {cross:12.1f} samples/s  tune {plain_s:6.1f} s")
    print(f"default pick  {pick:40s} {pick_rate[0]:12.1f} samples/s  tune {searched_s:6.1f} s")
    same = pick_rate[0] / best_fp32[0] if best_fp32[0] else float("nan")
    print(
        f"speedup over the best fp32 candidate (same tune): {same:.2f}x; "
        f"across tunes: {pick_rate[0] / cross if cross else float('nan'):.2f}x; "
        f"tune wall time ratio {searched_s / plain_s:.2f}x"
    )
    for outcome in searched.record.outcomes:
        figures = dict(outcome.profile.accuracy) if outcome.profile is not None else {}
        if outcome.failure is not None:
            print(f"  {outcome.backend}: refused at {outcome.failure.stage}: "
                  f"{outcome.failure.message[:160]}")  # fmt: skip
        elif figures and outcome.backend != "eager":
            print(f"  {outcome.backend}: {summary(figures)}")


def main() -> None:
    """Tune each model with both searches and print the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="mlp,cnn,transformer,bert")
    parser.add_argument("--search", default="default", choices=("default", "wide"))
    parser.add_argument("--strategy", default="confident:max-throughput")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    for name in args.models.split(","):
        fp32 = _tune(name, "none", args.strategy)
        searched = _tune(name, args.search, args.strategy)
        _report(name, fp32, searched)


if __name__ == "__main__":
    main()
