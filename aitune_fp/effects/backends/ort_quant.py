"""int8 ONNX models made by ``onnxruntime.quantization`` from the exported fp32 graph.

Rules:
- ``int8-dynamic``: ``quantize_dynamic`` with int8 weights (activations are quantized at
  run time, per call); convolutions are left in float by ONNX Runtime's dynamic mode, so
  it helps matmul-heavy models;
- weights use 7 bits (``reduce_range``): on x86 CPUs without VNNI the uint8×int8 kernels
  saturate their 16-bit sums, which took the demo MLP's RMS relative error from 0.017 to
  0.14 at the same speed (``docs/precision.md``);
- ``int8-static``: ``quantize_static`` in the QDQ format (uint8 activations, int8
  per-channel weights) calibrated with min/max on the *seen* rows of the user's samples
  (:func:`~aitune_fp.effects.checks.held_out.seen_samples`: the held-out rows are kept for the
  accuracy verdict), fed exactly as the runner feeds them; the calibration depends on the
  samples' values, so the artifact cache keys this variant by the samples' digest too
  (:func:`~aitune_fp.effects.cache.artifact_cache.cache_key`);
- both start from ONNX Runtime's own pre-processing (shape inference and graph
  optimisation) when it succeeds, else from the exported graph as is (said in the log);
- the quantized file ``model.<precision>.onnx`` replaces the graph's path; inputs, outputs
  and their layout are those of the exported graph;
- ``onnxruntime`` is imported only inside these functions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

from aitune_fp.effects.backends._build_guard import BuildLog
from aitune_fp.effects.backends._export import flat_inputs
from aitune_fp.effects.backends._onnx import OnnxGraph
from aitune_fp.effects.checks.held_out import seen_samples
from aitune_fp.effects.inputs.samples import Samples

QUANTIZED: Final = ("int8-dynamic", "int8-static")


def _preprocessed(source: Path, work_dir: Path, log: BuildLog) -> Path:
    from onnxruntime.quantization.shape_inference import quant_pre_process

    target = work_dir / "model.pre.onnx"
    try:
        quant_pre_process(str(source), str(target), skip_symbolic_shape=True)
        return target
    except Exception as error:  # pre-processing is an optimisation, not a requirement
        log.write(f"quantization pre-processing skipped: {type(error).__name__}: {error}")
        return source


def _feeds(graph: OnnxGraph, samples: Samples, names: list[str]) -> Iterator[dict[str, Any]]:
    """One feed per user sample (its seen rows), keyed by the graph's input names (as the
    runner feeds)."""
    flatten = flat_inputs(samples.spec)
    for item in seen_samples(samples).items:
        cpu = item.to("cpu")
        flat = flatten(*cpu.args, **cpu.kwargs)
        yield {
            graph.input_names[p]: flat[p].detach().contiguous().numpy()
            for p in range(len(graph.input_names))
            if graph.input_names[p] in names
        }


class _Reader:
    """A ``CalibrationDataReader`` over the user's samples."""

    def __init__(self, feeds: list[dict[str, Any]]) -> None:
        self.feeds = iter(feeds)

    def get_next(self) -> dict[str, Any] | None:
        return next(self.feeds, None)


def quantized(
    graph: OnnxGraph, samples: Samples, precision: str, work_dir: Path, log: BuildLog
) -> OnnxGraph:
    """``graph`` quantized to ``precision`` (one of :data:`QUANTIZED`)."""
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_dynamic,
        quantize_static,
    )

    if precision not in QUANTIZED:
        raise ValueError(f"precision must be one of {QUANTIZED}, got {precision!r}")
    target = work_dir / f"model.{precision}.onnx"
    with log.timed("quantize"):
        source = _preprocessed(graph.path, work_dir, log)
        if precision == "int8-dynamic":
            quantize_dynamic(
                str(source), str(target), weight_type=QuantType.QInt8, reduce_range=True
            )
        else:
            import onnx

            model = onnx.load(str(source), load_external_data=False)
            names = [i.name for i in model.graph.input]
            reader = type("Reader", (_Reader, CalibrationDataReader), {})(
                list(_feeds(graph, samples, names))
            )
            quantize_static(
                str(source),
                str(target),
                reader,
                quant_format=QuantFormat.QDQ,
                activation_type=QuantType.QUInt8,
                weight_type=QuantType.QInt8,
                per_channel=True,
                reduce_range=True,
            )
    log.write(f"quantized to {precision}: {target.name} ({target.stat().st_size} bytes)")
    return dataclasses.replace(graph, path=target)
