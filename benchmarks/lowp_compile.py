"""Inductor / AOTInductor in bf16 (cast, autocast, weight freezing) and torchao int8, side by side.

Prints figures only. For each model (``bert``: the BERT-like classifier of
``benchmarks/precision.py``; ``mlp``: the demo MLP) at one batch size, every variant is
built in this process and timed in interleaved rounds (median of ``--calls`` calls per
round, the best round reported: the machine is shared), so all share one measurement
window. Errors are against eager fp32 on ``--batches`` batches: relative RMS and top-1
agreement. ``onnxruntime`` is ONNX Runtime fp32 (the dynamo exporter, CPU provider), the usual best
fp32 pick; the ``torchao-*`` variants need ``torchao`` installed (else they print failed).

    python benchmarks/lowp_compile.py [--models bert,mlp] [--batch 16] [--only a,b]
"""

from __future__ import annotations

import argparse
import copy
import importlib
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).parent))
from precision import BertLogits

from aitune_fp.models import DEMO_MODELS

Run = Callable[[torch.Tensor], torch.Tensor]


def _inputs(name: str, batch: int, count: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(7)
    if name == "bert":
        return [torch.randint(0, 30522, (batch, 64), generator=g) for _ in range(count)]
    return [torch.randn(batch, 256, generator=g) for _ in range(count)]


def _module(name: str) -> torch.nn.Module:
    return BertLogits().eval() if name == "bert" else DEMO_MODELS[name].build().eval()


def _cast_io(run: Callable[..., Any], dtype: torch.dtype | None) -> Run:
    def call(x: torch.Tensor) -> torch.Tensor:
        if dtype is not None and x.is_floating_point():
            x = x.to(dtype)
        return run(x).float()  # type: ignore[no-any-return]

    return call


def _variant(model: torch.nn.Module, spec: str, example: torch.Tensor) -> Run:
    """``spec``: backend[-bf16cast|-bf16auto][-freeze] or torchao-{dyn,wo}[-compile]."""
    freeze = spec.endswith("-freeze")
    m = copy.deepcopy(model)
    dtype = torch.bfloat16 if "bf16cast" in spec else None
    if dtype is not None:
        m = m.to(dtype)
    if spec.startswith("torchao"):
        ao = importlib.import_module("torchao.quantization")  # optional: untyped, maybe absent
        dyn = "dyn" in spec
        ao.quantize_(
            m, ao.Int8DynamicActivationInt8WeightConfig() if dyn else ao.Int8WeightOnlyConfig()
        )
    auto = "bf16auto" in spec
    if spec.startswith(("inductor", "torchao")) and ("compile" in spec or "inductor" in spec):
        # the options make a distinct backend: dynamo's backend-match guard recompiles
        compiled: Callable[..., Any] = torch.compile(m, options={"freezing": freeze})
        with torch.no_grad(), torch.autocast("cpu", torch.bfloat16, enabled=auto):
            compiled(example.to(dtype) if dtype and example.is_floating_point() else example)
        run: Callable[..., Any] = compiled
    elif spec.startswith("aoti"):
        x = example.to(dtype) if dtype and example.is_floating_point() else example
        batch = torch.export.Dim("batch", min=1, max=64)
        with torch.no_grad(), torch.autocast("cpu", torch.bfloat16, enabled=auto):
            program = torch.export.export(m, (x,), dynamic_shapes=({0: batch},))
        path = tempfile.mkdtemp() + "/m.pt2"
        configs = {"freezing": True} if freeze else None
        torch._inductor.aoti_compile_and_package(
            program, package_path=path, inductor_configs=configs
        )
        run = torch._inductor.aoti_load_package(path)
    elif spec == "onnxruntime":
        import onnxruntime

        path = tempfile.mkdtemp() + "/m.onnx"
        batch = torch.export.Dim("batch", min=1, max=64)
        torch.onnx.export(m, (example,), path, dynamic_shapes=({0: batch},), dynamo=True)
        session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
        feed = session.get_inputs()[0].name
        run = lambda x: torch.from_numpy(session.run(None, {feed: x.numpy()})[0])  # noqa: E731
    else:
        run = m

    def call(x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad(), torch.autocast("cpu", torch.bfloat16, enabled=auto):
            return run(x)  # type: ignore[no-any-return]

    return _cast_io(call, dtype)


def _errors(ref: list[torch.Tensor], got: list[torch.Tensor]) -> tuple[float, float]:
    r, g = torch.cat(ref).double(), torch.cat(got).double()
    rms = float((g - r).norm() / r.norm())
    top1 = float((g.argmax(-1) == r.argmax(-1)).double().mean())
    return rms, top1


def _time(run: Run, x: torch.Tensor, calls: int) -> float:
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        run(x)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1e3


SPECS = (
    "eager", "eager-bf16cast", "eager-bf16auto", "onnxruntime",
    "inductor", "inductor-freeze", "inductor-bf16cast", "inductor-bf16cast-freeze",
    "inductor-bf16auto", "inductor-bf16auto-freeze",
    "aoti", "aoti-freeze", "aoti-bf16cast", "aoti-bf16cast-freeze",
    "torchao-dyn", "torchao-dyn-compile", "torchao-dyn-compile-freeze",
    "torchao-wo", "torchao-wo-compile",
)  # fmt: skip


def main() -> None:
    """Build each variant, check its errors, time all in interleaved rounds, print a table."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default="bert,mlp")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--batches", type=int, default=8)
    p.add_argument("--calls", type=int, default=20)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--only", default="")
    p.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: torch's)")
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    specs = [s for s in SPECS if not args.only or s in args.only.split(",")]
    for name in args.models.split(","):
        model = _module(name)
        xs = _inputs(name, args.batch, args.batches)
        with torch.no_grad():
            ref = [model(x) for x in xs]
        runs: dict[str, Run] = {}
        info: dict[str, str] = {}
        for spec in specs:
            start = time.perf_counter()
            try:
                runs[spec] = _variant(model, spec, xs[0])
                with torch.no_grad():
                    rms, top1 = _errors(ref, [runs[spec](x) for x in xs])
                took = time.perf_counter() - start
                info[spec] = f"{rms:9.2e} {top1 * 100:6.1f}% build {took:5.0f}s"
            except Exception as e:
                print(f"{name} {spec}: failed: {type(e).__name__}: {str(e)[:300]}", flush=True)
            print(f"{name} {spec}: {info.get(spec, '-')}", flush=True)
        times: dict[str, list[float]] = {s: [] for s in runs}
        for _ in range(args.rounds):
            for spec, run in runs.items():
                times[spec].append(_time(run, xs[0], args.calls))
        base = min(times["eager"]) if "eager" in times else None
        print(f"\n{name}, batch {args.batch} | ms (best round) | vs eager | rel RMS, top-1, build")
        for spec, ts in times.items():
            ms = min(ts)
            ratio = f"{base / ms:5.2f}x" if base else "-"
            print(f"{spec:28s} {ms:8.2f} {ratio} {info[spec]}", flush=True)


if __name__ == "__main__":
    main()
