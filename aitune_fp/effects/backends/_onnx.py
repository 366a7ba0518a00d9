"""Export a module to ONNX with the dynamo exporter, a dynamic batch axis and dynamic dims.

Rules:
- the graph's inputs are named after the input spec (``input_0`` …, then keyword names) and
  take the tensors in spec order; its outputs are ``output_0`` … in the eager output's
  pytree order, so :class:`~aitune_fp.effects.backends._export.OutputLayout` rebuilds the
  eager structure from them;
- the module is captured with ``torch.export`` (non-strict) first and that program is
  translated, so a module ``torch.export`` cannot trace fails here rather than being
  captured by the ONNX exporter's fallback tracers (which freeze untraceable values, such
  as a numpy computation, into constants);
- the batch axis of every input is one symbolic dimension, shared by all inputs, and so is
  every dynamic dimension of the input spec (over its range);
- the exporter may drop an input the graph never reads; :class:`OnnxGraph` keeps the spec
  positions of the inputs that remain.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from aitune_fp.effects.backends._export import (
    FlatModule,
    OutputLayout,
    batch_dim,
    eager_layout,
    example_batch,
    flat_dynamic_shapes,
)
from aitune_fp.effects.backends._guard import BuildLog
from aitune_fp.effects.inputs import Samples


@dataclass(frozen=True, slots=True)
class OnnxGraph:
    """An exported ONNX file and how its inputs and outputs map to the module's call."""

    path: Path
    input_names: tuple[str, ...]
    output_names: tuple[str, ...]
    layout: OutputLayout


def export_onnx(
    module: torch.nn.Module,
    samples: Samples,
    device: torch.device,
    path: Path,
    log: BuildLog,
    *,
    max_batch_size: int | None = None,
) -> OnnxGraph:
    """Export ``module`` (already on ``device``, in eval mode) to ``path``."""
    batch = example_batch(samples, device)
    layout = eager_layout(module, batch)
    spec = samples.spec
    output_names = tuple(f"output_{i}" for i in range(len(layout.labels)))
    dim = batch_dim() if max_batch_size is None else batch_dim(max_batch_size)
    with log.timed("export"):
        program = torch.export.export(
            FlatModule(module, spec).eval(),
            batch.flat(),
            dynamic_shapes=flat_dynamic_shapes(spec, dim),
            strict=False,
        )
    with log.timed("compile"):
        torch.onnx.export(
            program,
            (),
            str(path),
            dynamo=True,
            input_names=list(spec.names),
            output_names=list(output_names),
            verbose=False,
        )
    log.write(
        f"exported ONNX to {path}; outputs {dict(zip(output_names, layout.labels, strict=True))}"
    )
    return OnnxGraph(path, spec.names, output_names, layout)
