"""One cold NVIDIA AITune 0.6 tune of an embedded demo model on the CPU (run by
:mod:`vs_aitune` with a Python that has ``aitune`` installed; its log names the pick).

AITune's default backends are TensorRT's and Torch-TensorRT's plus TorchInductor AOT and JIT;
on a CPU its default strategy refuses to start ("CUDA is not available"), so this side
passes the CPU-capable ones it ships: TorchEager, TorchInductorJit, TorchInductorAot and
ONNXRuntime (four candidates, AITune's defaults less those that need CUDA).

    python benchmarks/aitune_side.py MODEL STRATEGY   # STRATEGY: max-throughput | min-latency
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


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
    wrapped = ait.Module(model, name, strategy=kind[strategy_name](backends=backends))
    with torch.inference_mode():
        ait.tune(wrapped, list(demo.samples()), device="cpu")
    return 0  # the pick is AITune's own log line ("| backend: … | speedup"), read by vs_aitune


if __name__ == "__main__":
    raise SystemExit(main())
