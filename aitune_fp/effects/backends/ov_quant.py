"""int8 OpenVINO models made by NNCF from the IR read from the ONNX export.

Rules:
- ``int8``: post-training quantization (``nncf.quantize``, its default mixed preset;
  ``model_type=TRANSFORMER`` when the graph has a ``Softmax``, NNCF's scheme for attention
  models, without which it fails on a BERT classifier's embeddings) calibrated on the
  *seen* rows of the user's samples only
  (:func:`~aitune_fp.effects.checks.held_out.seen_samples`: the held-out rows judge its
  accuracy, as for every int8 candidate), each fed exactly as the runner feeds it; the
  calibration depends on the samples' values, so the artifact cache keys it by their
  digest too;
- ``int8-weights``: weight-only compression (``nncf.compress_weights``, int8 asymmetric
  weights, activations in float): no calibration, the IR's weights a quarter of their
  float32 size;
- NNCF is imported only here, inside :func:`quantized`, at build time: its import takes
  seconds and no other candidate needs it.
"""

from __future__ import annotations

from typing import Any, Final

from aitune_fp.effects.backends._export import flat_inputs
from aitune_fp.effects.backends._guard import BuildLog
from aitune_fp.effects.backends._onnx import OnnxGraph
from aitune_fp.effects.checks.held_out import seen_samples
from aitune_fp.effects.inputs.samples import Samples

QUANTIZATIONS: Final = ("none", "int8", "int8-weights")


def _feeds(graph: OnnxGraph, samples: Samples, names: list[str]) -> list[list[Any]]:
    """One feed per user sample (its seen rows), in the model's input order."""
    flatten = flat_inputs(samples.spec)
    positions = [graph.input_names.index(n) for n in names]
    feeds = []
    for item in seen_samples(samples).items:
        cpu = item.to("cpu")
        flat = flatten(*cpu.args, **cpu.kwargs)
        feeds.append([flat[p].detach().contiguous().numpy() for p in positions])
    return feeds


def _attends(model: Any) -> bool:
    """Whether the model computes a softmax (attention): NNCF's transformer scheme then."""
    return any(op.get_type_name() == "Softmax" for op in model.get_ops())


def quantized(model: Any, graph: OnnxGraph, samples: Samples, how: str, log: BuildLog) -> Any:
    """The OpenVINO ``model`` quantized as ``how`` says (``int8`` or ``int8-weights``)."""
    if how not in QUANTIZATIONS[1:]:
        raise ValueError(f"quantization must be one of {QUANTIZATIONS[1:]}, got {how!r}")
    attends = how == "int8" and _attends(model)
    with log.timed("quantize"):
        import nncf

        if how == "int8-weights":
            done = nncf.compress_weights(model)
        else:
            names = [p.get_any_name() for p in model.inputs]
            feeds = _feeds(graph, samples, names)
            kind = nncf.ModelType.TRANSFORMER if attends else None
            done = nncf.quantize(
                model, nncf.Dataset(feeds), subset_size=len(feeds), model_type=kind
            )
    said = "calibrated on the seen rows" if how == "int8" else "weights only"
    scheme = ", transformer scheme" if attends else ""
    log.write(f"NNCF {nncf.__version__}: {how} ({said}{scheme})")
    return done
