"""One cold NVIDIA AITune 0.6 tune of an embedded demo model on the CPU (run by
:mod:`vs_aitune` with a Python that has ``aitune`` installed; its log names the pick).

AITune's default backends are TensorRT's and Torch-TensorRT's plus TorchInductor AOT and JIT;
on a CPU its default strategy refuses to start ("CUDA is not available"), so this side
passes the CPU-capable ones it ships: TorchEager, TorchInductorJit, TorchInductorAot and
ONNXRuntime (four candidates, AITune's defaults less those that need CUDA).

    python benchmarks/aitune_side.py MODEL STRATEGY [MAX_BATCH]
    # STRATEGY: max-throughput | min-latency; MAX_BATCH (a power of two): the largest batch
    # size its profiling ladder tries (default: its own, 2**0 … 2**20, stopped when the
    # throughput saturates; on a CPU that search alone can take many minutes)
    # AITUNE_SIDE_SAVE=PATH: the tuned module also saved there (``aitune.torch.save``)
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _row(sample: Any) -> Any:
    """A demo sample (a batch of one) as AITune's dataset item: one row, which AITune
    batches itself."""
    if isinstance(sample, torch.Tensor):
        return sample[0]
    if isinstance(sample, dict):
        return {k: _row(v) for k, v in sample.items()}
    return tuple(_row(v) for v in sample)


def main() -> int:
    """Tune ``argv[1]`` by ``argv[2]`` and print AITune's pick."""
    import aitune.torch as ait  # type: ignore[import-not-found]
    from aitune.torch import backend as b

    from aitune_fp.models import DEMO_MODELS

    name, strategy_name = sys.argv[1], sys.argv[2]
    demo = DEMO_MODELS[name]
    torch.manual_seed(0)
    model = demo.factory().eval()
    backends = [
        b.TorchEagerBackend(),
        b.TorchInductorJitBackend(),
        b.TorchInductorAotBackend(),
        b.ONNXRuntimeBackend(),
    ]
    kind = {"max-throughput": ait.MaxThroughputStrategy, "min-latency": ait.MinLatencyStrategy}
    strategy = kind[strategy_name](backends=backends)
    if len(sys.argv) > 3:  # the same ladder as its default, up to MAX_BATCH
        ceiling = int(sys.argv[3])
        sizes = [2**n for n in range(21) if 2**n <= ceiling]
        strategy.profiling_config = replace(strategy.profiling_config, batch_sizes=sizes)
    wrapped = ait.Module(model, name, strategy=strategy)
    with torch.inference_mode():
        ait.tune(wrapped, [_row(s) for s in demo.samples()], device="cpu")
    save = os.environ.get("AITUNE_SIDE_SAVE")
    if save:  # vs_aitune --picks: its pick saved for the re-measure (the seconds taken off)
        began = time.monotonic()
        storage = ait.LocalTorchStorage(base_folder=str(Path(save).parent))
        ait.save(wrapped, Path(save).name, storage=storage)
        print("SAVE_S", time.monotonic() - began, flush=True)
    return 0  # the pick is AITune's own log line ("| backend: … | speedup"), read by vs_aitune


if __name__ == "__main__":
    raise SystemExit(main())
