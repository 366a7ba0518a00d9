"""Runners over an ONNX Runtime session: the module's own call in, its own outputs out.

Rules:
- the session's inputs are matched to the input spec by name; an input the module does not
  take is an error;
- on CPU, tensors go in as zero-copy numpy views and outputs come back via
  ``torch.from_numpy``;
- on CUDA, inputs and outputs are torch tensors bound in place with IO binding (output
  shapes are learned once per input shape); the session computes on the device's
  dedicated stream (:mod:`._streams`), which waits for the caller's current stream before
  each run (ONNX Runtime reads finished inputs, with no host synchronisation) and which the
  caller's stream waits for afterwards; one call at a time per runner: the IO binding and
  the learned output shapes are the runner's, so concurrent calls (serving runs a request
  alone in a thread beside a batch) are serialised by its lock and each call gets the rows
  of its own inputs;
- outputs come back in the eager module's structure (tensor, tuple, list or dict).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import torch

from aitune_fp.effects.backends._export import flat_inputs
from aitune_fp.effects.backends._onnx import OnnxGraph
from aitune_fp.effects.backends._streams import dedicated_stream, device_index, enter, leave
from aitune_fp.effects.inputs.samples import InputSpec

_ORT_TYPES = {
    "tensor(float)": torch.float32,
    "tensor(double)": torch.float64,
    "tensor(float16)": torch.float16,
    "tensor(bfloat16)": torch.bfloat16,
    "tensor(int64)": torch.int64,
    "tensor(int32)": torch.int32,
    "tensor(int16)": torch.int16,
    "tensor(int8)": torch.int8,
    "tensor(uint8)": torch.uint8,
    "tensor(bool)": torch.bool,
}
_ONNX_BFLOAT16 = 16  # onnx.TensorProto.BFLOAT16, which IO binding accepts as an element type


def input_positions(graph: OnnxGraph, session_inputs: Sequence[str]) -> tuple[int, ...]:
    """The spec position of every input the session takes, in session order."""
    unknown = [n for n in session_inputs if n not in graph.input_names]
    if unknown:
        raise RuntimeError(f"the ONNX graph has inputs the module does not take: {unknown}")
    return tuple(graph.input_names.index(n) for n in session_inputs)


def cpu_runner(
    session: Any, graph: OnnxGraph, positions: tuple[int, ...], spec: InputSpec
) -> Callable[..., Any]:
    """A runner feeding numpy views of CPU tensors and wrapping outputs with from_numpy."""
    flatten = flat_inputs(spec)
    feeds_of = tuple((graph.input_names[p], p) for p in positions)
    output_names = list(graph.output_names)
    run = session.run
    rebuild = graph.layout.rebuild
    single = graph.layout.treespec.is_leaf()

    def runner(*args: torch.Tensor, **kwargs: torch.Tensor) -> Any:
        flat = flatten(*args, **kwargs)
        outputs = run(output_names, {name: _numpy(flat[p]) for name, p in feeds_of})
        if single:
            return torch.from_numpy(outputs[0])
        return rebuild([torch.from_numpy(o) for o in outputs])

    return runner


def _numpy(t: torch.Tensor) -> Any:
    """A zero-copy numpy view of a CPU tensor (detached only when autograd tracks it)."""
    return t.detach().numpy() if t.requires_grad else t.numpy()


def _element_type(dtype: torch.dtype) -> Any:
    """The IO-binding element type for a torch dtype."""
    if dtype == torch.bfloat16:
        return _ONNX_BFLOAT16
    import numpy as np

    return np.dtype(str(dtype).removeprefix("torch.")).type


def cuda_runner(
    session: Any,
    graph: OnnxGraph,
    positions: tuple[int, ...],
    spec: InputSpec,
    device: torch.device,
) -> Callable[..., Any]:
    """A runner binding torch CUDA tensors in place: inputs read, outputs written by ORT.

    ORT computes on the dedicated stream given to its provider (``user_compute_stream``);
    that stream waits for the caller's before each run, and the caller's waits for it after.
    """
    flatten = flat_inputs(spec)
    binding = session.io_binding()
    index = device_index(device)
    stream = dedicated_stream(device)
    inputs_of = tuple(
        (graph.input_names[p], p, _element_type(getattr(torch, spec.tensors[p].dtype)))
        for p in positions
    )
    output_dtypes = [_ORT_TYPES[o.type] for o in session.get_outputs()]
    outputs_of = tuple(
        (name, dtype, _element_type(dtype))
        for name, dtype in zip(graph.output_names, output_dtypes, strict=True)
    )
    shapes_by_input: dict[tuple[tuple[int, ...], ...], list[tuple[int, ...]]] = {}
    lock = threading.Lock()  # one call at a time binds (the module rules)

    def output_shapes(key: tuple[tuple[int, ...], ...]) -> list[tuple[int, ...]]:
        shapes = shapes_by_input.get(key)
        if shapes is None:
            for name, _, _ in outputs_of:
                binding.bind_output(name, "cuda", index)
            caller = enter(stream, device)
            session.run_with_iobinding(binding)
            leave(caller, stream)
            shapes = [tuple(v.shape()) for v in binding.get_outputs()]
            shapes_by_input[key] = shapes
        return shapes

    def runner(*args: torch.Tensor, **kwargs: torch.Tensor) -> Any:
        with lock:
            return bound_run(*args, **kwargs)

    def bound_run(*args: torch.Tensor, **kwargs: torch.Tensor) -> Any:
        flat = flatten(*args, **kwargs)
        held = [flat[p].contiguous() for _, p, _ in inputs_of]  # alive until the run ends
        for (name, _, element), t in zip(inputs_of, held, strict=True):
            binding.bind_input(name, "cuda", index, element, tuple(t.shape), t.data_ptr())
        key = tuple(tuple(t.shape) for t in held)
        outputs = []
        for (name, dtype, element), shape in zip(outputs_of, output_shapes(key), strict=True):
            out = torch.empty(shape, dtype=dtype, device=device)
            binding.bind_output(name, "cuda", index, element, shape, out.data_ptr())
            outputs.append(out)
        caller = enter(stream, device)
        session.run_with_iobinding(binding)
        leave(caller, stream)
        return graph.layout.rebuild(outputs)

    return runner


def session_runner(
    session: Any, graph: OnnxGraph, spec: InputSpec, device: torch.device
) -> Callable[..., Any]:
    """The runner for ``session`` on ``device``: IO binding on CUDA, numpy views on CPU."""
    positions = input_positions(graph, [i.name for i in session.get_inputs()])
    if device.type == "cuda":
        return cuda_runner(session, graph, positions, spec, device)
    return cpu_runner(session, graph, positions, spec)
