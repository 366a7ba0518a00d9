"""The validate stage of a warm cache hit: against eager's stored outputs vs running eager.

Prints figures only. Per demo model, the runner validated is eager itself (so only the
reference's source differs); each of ``--repeats`` rounds validates once with eager run
for the reference (today's path on a miss) and once with the outputs a cache entry keeps
(:mod:`aitune_fp.effects.cache.reference`, read from its file as a hit would), alternating, at
batch sizes ``{1, --max-batch-size}``. It prints the median seconds of both and their
ratio. The stored-reference path still runs the backend on every batch and reads the
file; what it saves is eager's forward passes.

    python benchmarks/validate_reference.py [--models mlp,cnn,transformer]
                                            [--max-batch-size 16] [--repeats 9]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import torch

from aitune_fp.effects.backends.base import Built
from aitune_fp.effects.cache.reference import (
    INFO_KEY,
    eager_references,
    samples_digest,
    write_references,
)
from aitune_fp.effects.checks.validate import validate
from aitune_fp.effects.inputs.samples import Samples, normalise_samples
from aitune_fp.models import DEMO_MODELS


def _seconds(
    built: Built, module: torch.nn.Module, samples: Samples, sizes: tuple[int, ...]
) -> float:
    """Seconds of one validation (it must pass: the runner is eager itself)."""
    start = time.perf_counter()
    validate("eager", built, module, samples, torch.device("cpu"), batch_sizes=sizes).unwrap()
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="mlp,cnn,transformer")
    parser.add_argument("--max-batch-size", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    sizes = (1, args.max_batch_size)
    cpu = torch.device("cpu")
    print(f"validate stage, batch sizes {sizes}, median of {args.repeats}, cpu")
    print(f"  {'model':<12}{'eager ref s':>12}{'stored ref s':>14}{'ratio':>8}")
    for name in args.models.split(","):
        model = DEMO_MODELS[name]
        module = model.build().eval()
        samples = normalise_samples(model.samples())
        folder = Path(tempfile.mkdtemp())
        path = folder / "ref.pt"
        write_references(
            path, samples_digest(samples), eager_references(module, samples, sizes, cpu)
        )
        plain = Built(module)
        meta = {"file": str(path), "samples": samples_digest(samples)}
        stored = Built(module, info={INFO_KEY: meta})
        eager_s, stored_s = [], []
        for _ in range(args.repeats):
            eager_s.append(_seconds(plain, module, samples, sizes))
            stored_s.append(_seconds(stored, module, samples, sizes))
        e, s = statistics.median(eager_s), statistics.median(stored_s)
        print(f"  {name:<12}{e:>12.4f}{s:>14.4f}{e / s:>7.2f}×")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
