"""Export a module to ONNX with the dynamo exporter, a dynamic batch axis and dynamic dims.

Rules:
- the graph's inputs are named after the input spec (``input_0`` …, then keyword names;
  keyword inputs come in the order the program takes them, its signature's, and are fed
  by name); its outputs are ``output_0`` … in the eager output's pytree order, so
  :class:`~aitune_fp.effects.backends._export.OutputLayout` rebuilds the eager structure
  from them;
- what is translated is the shared ``torch.export`` program of the module's own call
  (:mod:`._shared_export`; loaded when another backend exported it already), so a module
  ``torch.export`` cannot trace fails here rather than being captured by the ONNX
  exporter's fallback tracers (which freeze untraceable values, such as a numpy
  computation, into constants); ``OnnxGraph.export`` says whether it was shared or fresh;
- the translation of a shared program is shared too (:mod:`._shared_onnx`): the first
  ONNX backend of a run translates, the others copy its graph;
- the batch axis of every input is one symbolic dimension, shared by all inputs, and so is
  every dynamic dimension of the input spec (over its range);
- the exporter may drop an input the graph never reads; :class:`OnnxGraph` keeps the spec
  positions of the inputs that remain.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from aitune_fp.effects.backends._build_guard import BuildLog
from aitune_fp.effects.backends._export import (
    UNBOUNDED_BATCH,
    OutputLayout,
    eager_layout,
    example_batch,
)
from aitune_fp.effects.backends._shared_export import SharedProgram, on_program
from aitune_fp.effects.backends._shared_onnx import form_key, shared_translation
from aitune_fp.effects.backends._treespec import keyword_names
from aitune_fp.effects.inputs.samples import InputSpec, Samples


@dataclass(frozen=True, slots=True)
class OnnxGraph:
    """An exported ONNX file and how its inputs and outputs map to the module's call."""

    path: Path
    input_names: tuple[str, ...]
    output_names: tuple[str, ...]
    layout: OutputLayout
    export: str = "fresh"


def program_input_names(program: Any, spec: InputSpec) -> tuple[str, ...]:
    """The spec names of ``program``'s inputs in the order it takes them: positional, then
    keywords in its signature's order (``torch.export`` orders keywords that way)."""
    keywords = keyword_names(program.module_call_graph[0].signature.in_spec)
    if sorted(keywords) != sorted(spec.keywords):
        raise RuntimeError(f"the program takes keywords {keywords}, the spec {spec.keywords}")
    return (*spec.positional, *keywords)


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

    def translate(program: Any, shared: SharedProgram | None) -> str:
        input_names = program_input_names(program, spec)

        def fresh() -> None:
            with log.timed("compile"):
                torch.onnx.export(
                    program,
                    (),
                    str(path),
                    dynamo=True,
                    input_names=list(input_names),
                    output_names=list(output_names),
                    verbose=False,
                )

        form = form_key(input_names, output_names)
        return shared_translation(shared, form, path, fresh, log)

    bound = UNBOUNDED_BATCH if max_batch_size is None else max_batch_size
    _, source = on_program(module, batch, spec, device, path.parent, log, translate, bound=bound)
    log.write(
        f"exported ONNX to {path}; outputs {dict(zip(output_names, layout.labels, strict=True))}"
    )
    return OnnxGraph(path, spec.names, output_names, layout, source)


def saved_graph(artifact: Path, spec: InputSpec, outputs: Any) -> OnnxGraph:
    """The graph facts of an ONNX file exported by aitune_fp, read back for loading: inputs
    named after the spec, outputs ``output_0`` … in the eager output's pytree order
    (``outputs``: that pytree spec)."""
    labels = tuple(f"output_{i}" for i in range(outputs.num_leaves))
    return OnnxGraph(artifact, spec.names, labels, OutputLayout(outputs, labels))
