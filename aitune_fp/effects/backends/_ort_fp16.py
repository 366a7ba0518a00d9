"""The exported graph in float16 for ONNX Runtime's CUDA provider, by ONNX Runtime's own
converter, and the choice of which graph a config's session runs.

Rules:
- ``onnxruntime(provider='cuda', fp16=True)`` runs the graph converted by
  ``onnxruntime.transformers.float16.convert_float_to_float16`` with ``keep_io_types``:
  weights and activations in float16, inputs and outputs still float32 (the converter
  inserts the casts), so the runner feeds and returns the same dtypes as eager; the ops of
  the converter's ``DEFAULT_OP_BLOCK_LIST`` stay float32: the ONNX-ML operators and
  ``NonMaxSuppression``, ``TopK``, ``RoiAlign``, ``Range``, ``CumSum``, ``Min``, ``Max``,
  ``Upsample``; everything else, ``Softmax``, ``ReduceMean``, ``Pow`` and ``Exp``
  included, computes in float16 (the accuracy policy judges the result);
- a graph over protobuf's 2 GiB (its weights in external data) converts too: shapes are
  inferred on the file (``onnx.shape_inference.infer_shapes_path``, which has no size
  limit, written beside the export so its external data still resolves), the converter
  runs with ``disable_shape_infer=True`` (its in-memory ``infer_shapes`` refuses such a
  model), and the result is saved with external data when it is still too large;
- the conversion is a graph rewrite: it needs no device, and the converted file
  ``model.float16.onnx`` (external data beside it when it is too large for one protobuf)
  is the artifact, so the cache keys and stores it like any other ONNX file;
- only the CUDA provider converts (the TensorRT provider builds fp16 engines itself from
  the float32 graph); a quantized precision goes through :mod:`.ort_quant`;
- ``onnx`` and ``onnxruntime`` are imported only inside these functions.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import torch

from aitune_fp.effects.backends._build_guard import BuildLog
from aitune_fp.effects.backends._onnx import OnnxGraph
from aitune_fp.effects.backends.ort_quant import QUANTIZED, quantized
from aitune_fp.effects.inputs.samples import Samples

_PROTOBUF_LIMIT = 2**31 - 2**26  # below protobuf's 2 GiB, with room for the graph itself


def float16_graph(graph: OnnxGraph, work_dir: Path, log: BuildLog) -> OnnxGraph:
    """``graph`` converted to float16 with float32 inputs and outputs (see the rules)."""
    import onnx
    from onnx.shape_inference import infer_shapes_path
    from onnxruntime.transformers.float16 import convert_float_to_float16

    target = work_dir / "model.float16.onnx"
    inferred = graph.path.with_name(f"{graph.path.stem}.shapes.onnx")  # beside its data
    with log.timed("convert"):
        infer_shapes_path(str(graph.path), str(inferred))
        try:
            model = onnx.load(str(inferred))
        finally:
            inferred.unlink(missing_ok=True)
        converted = convert_float_to_float16(model, keep_io_types=True, disable_shape_infer=True)
        large = converted.ByteSize() > _PROTOBUF_LIMIT
        onnx.save_model(
            converted,
            str(target),
            save_as_external_data=large,
            location=f"{target.name}.data" if large else None,
            size_threshold=0,  # when large, every weight goes to the data file
        )
    log.write(f"converted to float16 (float32 inputs/outputs): {target.name}")
    return dataclasses.replace(graph, path=target)


def session_graph(
    config: Any,
    graph: OnnxGraph,
    samples: Samples,
    device: torch.device,
    work_dir: Path,
    log: BuildLog,
) -> OnnxGraph:
    """The graph ``config``'s session runs on ``device``: quantized for an int8 precision,
    float16 for ``fp16`` on the CUDA provider, else the export as is."""
    if config.precision in QUANTIZED:
        return quantized(graph, samples, config.precision, work_dir, log)
    if config.fp16 and config.resolved_provider(device) == "cuda":
        return float16_graph(graph, work_dir, log)
    return graph
