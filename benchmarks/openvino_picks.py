"""The BERT-like model's picks with and without the OpenVINO candidates, side by side.

Prints figures only (no pass/fail). In one process, for batch 1 (``min-latency``, batch
capped at 1) and batch 16 (``max-throughput``, batch capped at 16), the BERT classifier of
``benchmarks/precision.py`` is tuned twice with the default search, each time with a fresh
artifact cache: once without the ``openvino`` candidates (the search before the OpenVINO
backend) and once with all of them. Per case it prints both picks, the pick's latency
(ms per call at its batch), the ratio of the two picks and both tune wall times.

    python benchmarks/openvino_picks.py [--batches 1,16]
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from precision import BertLogits

from aitune_fp.core.accuracy import Search
from aitune_fp.core.strategies.registry import parse_strategy
from aitune_fp.effects.backends.search_space import search_candidates
from aitune_fp.shell.io import perform
from aitune_fp.shell.tune_module import TuneOptions, TuningRun, run_tuning

STRATEGIES = {1: "min-latency", 16: "max-throughput"}


def _tune(batch: int, with_openvino: bool) -> tuple[TuningRun, float]:
    g = torch.Generator().manual_seed(1)
    samples = [torch.randint(0, 30522, (batch, 64), generator=g) for _ in range(4)]
    candidates = [
        c for c in search_candidates(Search(), "cpu") if with_openvino or c.name != "openvino"
    ]
    start = time.perf_counter()
    run = perform(
        run_tuning(
            BertLogits(),
            samples,
            parse_strategy(STRATEGIES[batch]),
            candidates,
            TuneOptions(
                cache_dir=tempfile.mkdtemp(prefix="aitune-ov-"),
                model_name="bert",
                max_batch_size=batch,
            ),
        )
    ).unwrap()
    return run, time.perf_counter() - start


def _pick(run: TuningRun) -> tuple[str, float]:
    selection = run.record.selection
    if selection is None or selection.result is None:
        return "(none)", float("nan")
    return selection.backend, selection.result.latency


def main() -> None:
    """Tune the BERT-like model with and without OpenVINO per batch and print both picks."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", default="1,16")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    for batch in (int(b) for b in args.batches.split(",")):
        (without, without_s), (with_ov, with_s) = _tune(batch, False), _tune(batch, True)
        (a, a_ms), (b, b_ms) = _pick(without), _pick(with_ov)
        print(f"\n== bert batch {batch} ({STRATEGIES[batch]})")
        print(f"without openvino  {a:45s} {a_ms:8.3f} ms  tune {without_s:6.1f} s")
        print(f"with openvino     {b:45s} {b_ms:8.3f} ms  tune {with_s:6.1f} s")
        print(f"pick speedup {a_ms / b_ms:.2f}x; tune wall ratio {with_s / without_s:.2f}x")
        for outcome in with_ov.record.outcomes:
            if outcome.failure is not None and outcome.backend.startswith("openvino"):
                print(f"  {outcome.backend}: refused at {outcome.failure.stage}: "
                      f"{outcome.failure.message[:160]}")  # fmt: skip


if __name__ == "__main__":
    main()
