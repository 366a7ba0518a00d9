"""Re-measure the picks of one side-by-side pair: ours and NVIDIA AITune 0.6's, each loaded
from what its own tune saved, timed interleaved in one process (run by :mod:`vs_aitune`
with ``--picks``, in AITune's Python with aitune_fp's packages on the path).

    python benchmarks/picks_remeasure.py MODEL STRATEGY OURS_FOLDER AITUNE_FILE [SECONDS]

Prints figures only: for min-latency the p50 latency at batch 1 of each pick, for
max-throughput each pick's best throughput over batch sizes 1, 8 and 64, and the ratio
(ours / AITune's, in the strategy's sense: above 1 means our pick is the better one).
Rounds alternate the two picks (who goes first alternates too), each round a burst of
calls per pick at each batch size, so drift in the machine falls on both.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _burst_ms(call: Callable[[], Any], calls: int) -> list[float]:
    """``calls`` timed calls after one untimed one, in ms each."""
    call()
    out = []
    for _ in range(calls):
        began = time.perf_counter_ns()
        call()
        out.append((time.perf_counter_ns() - began) / 1e6)
    return out


def main() -> int:
    """Load both picks and print the interleaved figures."""
    import aitune.torch as ait  # type: ignore[import-not-found]

    import aitune_fp
    from aitune_fp.effects.inputs.samples import make_batch, normalise_samples
    from aitune_fp.models import DEMO_MODELS

    model, strategy, ours_dir, theirs_file = sys.argv[1:5]
    seconds = float(sys.argv[5]) if len(sys.argv) > 5 else 20.0
    demo = DEMO_MODELS[model]
    torch.manual_seed(0)
    samples_in = normalise_samples([next(iter(demo.samples()))])  # its first row, repeated
    ours = aitune_fp.load(ours_dir)
    theirs_path = Path(theirs_file)
    storage = ait.LocalTorchStorage(base_folder=str(theirs_path.parent))
    theirs = ait.load(demo.factory().eval(), theirs_path.name, storage=storage)
    sizes = (1,) if strategy == "min-latency" else (1, 8, 64)
    samples: dict[str, dict[int, list[float]]] = {"ours": {}, "aitune": {}}
    picks = {"ours": ours, "aitune": theirs}
    began, rounds = time.monotonic(), 0
    with torch.inference_mode():
        while time.monotonic() - began < seconds or rounds < 4:
            order = ("ours", "aitune") if rounds % 2 == 0 else ("aitune", "ours")
            for size in sizes:
                batch = make_batch(samples_in, size)
                for side in order:
                    calls = 10 if size < 64 else 4
                    timed = _burst_ms(batch.bound(picks[side]), calls)
                    samples[side].setdefault(size, []).extend(timed)
            rounds += 1
    p50 = {s: {b: statistics.median(v) for b, v in by.items()} for s, by in samples.items()}
    if strategy == "min-latency":
        figure = {s: p50[s][1] for s in p50}
        ratio = figure["aitune"] / figure["ours"]
        print(
            f"PICKS latency@1 p50: ours {figure['ours']:.3f} ms, "
            f"AITune {figure['aitune']:.3f} ms; ours {ratio:.2f}x as fast ({rounds} rounds)"
        )
    else:
        best = {s: max(b / (ms / 1e3) for b, ms in p50[s].items()) for s in p50}
        ratio = best["ours"] / best["aitune"]
        print(
            f"PICKS best throughput: ours {best['ours']:.0f}/s, AITune {best['aitune']:.0f}/s;"
            f" ours {ratio:.2f}x ({rounds} rounds)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
