"""OpenVINO int8 (NNCF) beside ONNX Runtime's dynamic int8 and the fp32 backends.

Prints figures only (no pass/fail). For each model (the demo's MLP, CNN and Transformer,
and the BERT-like classifier of ``benchmarks/precision.py``) every config below is built
once on the CPU, checked against eager (``validate``: its accuracy figures, int8 judged
by the default policy) and timed by the profiler at batch 16 (priming, warm-up to steady
state, ``--calls`` timed calls on a rotating input pool): eager fp32, ONNX Runtime and
OpenVINO fp32, ``onnxruntime(precision='int8-dynamic')`` and
``openvino(quantization='int8')``. Per model: samples/s (from the median latency), the
speedup over eager and over the best fp32 config, and the relative RMS error.

    python benchmarks/int8_side_by_side.py [--models mlp,cnn,transformer,bert] [--calls 50]
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch
from returns.result import Failure

sys.path.insert(0, str(Path(__file__).resolve().parent))

from precision import BertLogits

from aitune_fp.core.measure.stop_rules import fixed_steps, never_stop
from aitune_fp.effects.backends.eager import TorchEager
from aitune_fp.effects.backends.openvino import OpenVino
from aitune_fp.effects.backends.ort import OnnxRuntime
from aitune_fp.effects.checks.validate import validate
from aitune_fp.effects.inputs.samples import normalise_samples
from aitune_fp.effects.measure.profiler import SweepPlan, profile_runner
from aitune_fp.models import DEMO_MODELS
from aitune_fp.shell.io import perform

CONFIGS = (TorchEager(), OnnxRuntime(), OpenVino(), OnnxRuntime(precision="int8-dynamic"),
           OpenVino(quantization="int8"))  # fmt: skip
BATCH = 16
CPU = torch.device("cpu")


def _model(name: str) -> tuple[torch.nn.Module, Any]:
    if name == "bert":
        g = torch.Generator().manual_seed(1)
        return BertLogits(), [torch.randint(0, 30522, (16, 64), generator=g) for _ in range(8)]
    model = DEMO_MODELS[name]
    return model.build().eval(), model.samples()


def _row(config: Any, module: torch.nn.Module, samples: Any, calls: int) -> tuple[float, str]:
    """Samples/s at batch 16 and the relative RMS error (or why it has none)."""
    built = perform(config.build(module, samples, CPU, Path(tempfile.mkdtemp())))
    if isinstance(built, Failure):
        return float("nan"), built.failure().message[:80]
    runner = built.unwrap()
    checked = perform(validate(config.describe(), runner, module, samples, CPU,
                               batch_sizes=(1, BATCH)))  # fmt: skip
    if isinstance(checked, Failure):
        said = "refused: " + checked.failure().message[:60]
    else:
        said = f"rel RMS {checked.unwrap().figures.get('fp64_rms_rel_error', float('nan')):.2g}"
    plan = SweepPlan((BATCH,), fixed_steps(warmup=10, steps=calls), never_stop())
    profile = perform(profile_runner(config.describe(), runner.runner, samples, CPU, plan))
    runner.close()
    latencies = sorted(profile.unwrap().latencies_ms[BATCH])
    return BATCH * 1000.0 / latencies[len(latencies) // 2], said


def main() -> None:
    """Build, check and time every config on each model; print the side-by-side table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="mlp,cnn,transformer,bert")
    parser.add_argument("--calls", type=int, default=50)
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    for name in args.models.split(","):
        module, raw = _model(name)
        samples = normalise_samples(raw)
        rows = [(c.describe(), *_row(c, module, samples, args.calls)) for c in CONFIGS]
        eager = rows[0][1]
        fp32 = max(s for n, s, _ in rows if "int8" not in n)
        print(f"\n== {name} (samples/s at batch {BATCH}, median of {args.calls} calls)")
        for backend, speed, said in rows:
            print(f"{backend:40s} {speed:12.1f} {speed / eager:6.2f}x eager "
                  f"{speed / fp32:6.2f}x best fp32  {said}")  # fmt: skip


if __name__ == "__main__":
    main()
