"""Accuracy claims against unseen inputs: the pick's stated bound, checked (issue 49).

Prints figures only (no pass/fail). Tunes a BERT-style classifier built from a
``transformers`` config (4 layers, hidden 256, 8 labels, random weights) on 16
single-sequence samples with ``max_throughput`` and the default precision search, then:
- each candidate's accuracy verdict (its bound, the rows it rests on, or why refused),
  the report's precision line and the tune's wall time;
- the pick's top-1 agreement with eager on ``--unseen`` fresh sequences (drawn with
  another seed than the tune's samples), beside the bound the report claimed;
- each candidate's validation wall (the ``validate`` stage of its build job) and how many
  rows its verdict drew fresh: the cost of the evidence.

    python benchmarks/accuracy_evidence.py [--unseen 256] [--seq 32]
"""

from __future__ import annotations

import argparse
import logging
import tempfile
import time
from typing import Any

import torch

from aitune_fp.core.report.accuracy import figures_text, precision_line
from aitune_fp.core.strategies import max_throughput
from aitune_fp.shell.io import perform
from aitune_fp.shell.tune_module import TuneOptions, TuningRun, run_tuning

VOCAB = 30522


class Classifier(torch.nn.Module):
    """A ``transformers`` BERT classifier from a config, called with ``input_ids``."""

    def __init__(self) -> None:
        super().__init__()
        import transformers

        options: dict[str, Any] = {
            "hidden_size": 256,
            "num_hidden_layers": 4,
            "num_attention_heads": 4,
            "intermediate_size": 1024,
            "num_labels": 8,
        }
        torch.manual_seed(0)
        model: Any = transformers.BertForSequenceClassification(transformers.BertConfig(**options))
        self.model = model.eval()

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        """The classifier's logits."""
        return self.model(input_ids=input_ids).logits  # type: ignore[no-any-return]


def _sequences(count: int, seq: int, seed: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(0, VOCAB, (1, seq), generator=g) for _ in range(count)]


def _tune(module: torch.nn.Module, seq: int) -> tuple[TuningRun, float]:
    start = time.perf_counter()
    run = perform(
        run_tuning(
            module,
            _sequences(16, seq, 1),
            max_throughput,
            options=TuneOptions(
                cache_dir=tempfile.mkdtemp(prefix="aitune-evidence-"), model_name="bert8"
            ),
        )
    ).unwrap()
    return run, time.perf_counter() - start


def _agreement(run: TuningRun, module: torch.nn.Module, unseen: int, seq: int) -> float:
    """The tuned module's top-1 agreement with eager on ``unseen`` fresh sequences."""
    inputs = torch.cat(_sequences(unseen, seq, 7))
    with torch.inference_mode():
        want = module(inputs).argmax(-1)
        tuned: Any = run.tuned
        got = torch.cat([tuned(inputs[i : i + 16]) for i in range(0, unseen, 16)])
    return float((got.argmax(-1) == want).double().mean())


def _validation_walls(run: TuningRun) -> dict[str, float]:
    """Each candidate's ``validate`` stage wall, from the run's stage records."""
    return {
        o.backend: o.stage_seconds["validate"]
        for o in run.record.outcomes
        if "validate" in o.stage_seconds
    }


def main() -> None:
    """Tune, then check the pick's claim on unseen inputs."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--unseen", type=int, default=256)
    parser.add_argument("--seq", type=int, default=32)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    module = Classifier()
    run, wall = _tune(module, args.seq)
    walls = _validation_walls(run)
    for o in run.record.outcomes:
        f = dict(o.profile.accuracy) if o.profile is not None else {}
        drawn = f.get("held_out_drawn", 0.0)
        where = f"validate {walls[o.backend]:.2f} s, " if o.backend in walls else ""
        if o.failure is not None:
            took = f" ({where.removesuffix(', ')})" if where else ""
            print(f"  {o.backend}: refused at {o.failure.stage}{took}: {o.failure.message[:400]}")
        elif f and o.backend != "eager":
            print(f"  {o.backend}: {figures_text(f)} ({where}{drawn:g} rows drawn)")
    pick = run.record.selection.backend if run.record.selection is not None else "(none)"
    print(f"pick: {pick}; tune wall {wall:.1f} s")
    print(precision_line(run.record))
    rate = _agreement(run, module, args.unseen, args.seq)
    print(f"pick's top-1 agreement with eager on {args.unseen} unseen sequences: {rate:.1%}")


if __name__ == "__main__":
    main()
