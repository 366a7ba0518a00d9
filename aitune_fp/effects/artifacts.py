"""Load a runner back from a built artifact, without rebuilding it.

Rules:
- a backend config that has a ``load(artifact, spec, outputs, device, work_dir)`` method
  loads its own artifact; otherwise the artifact is loaded by kind: an AOTInductor package
  (``.pt2``, via ``torch._inductor.aoti_load_package``), an ONNX model (an ONNX Runtime
  session with the config's provider and options) or a serialised TensorRT engine; other
  kinds (JIT backends, Torch-TensorRT programs) are rebuilt from the module instead;
- the runner takes the module's own call and returns the module's own output structure
  (``outputs``, the eager output's pytree spec);
- loading is an effect that never raises for a backend problem: a failure is a
  ``BackendFailure`` at stage ``build`` whose message says what could not be loaded;
- nothing is unpickled: packages and ONNX files are read by their own runtimes, and an
  inference SDK is imported only inside the function that needs it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

import torch
import torch.utils._pytree as pytree
from returns.io import IOResult

from aitune_fp.core.records import BackendFailure
from aitune_fp.effects.backends._guard import BuildLog, guarded_build, unavailable
from aitune_fp.effects.backends.base import Backend, Built
from aitune_fp.effects.inputs import InputSpec

Loader = Callable[[Any, Path, InputSpec, pytree.TreeSpec, torch.device, Path, BuildLog], Built]


def artifact_files(artifact: Path) -> tuple[Path, ...]:
    """The artifact and the files that belong to it (``model.onnx.data`` for
    ``model.onnx``), sorted by name."""
    siblings = (
        p
        for p in artifact.parent.iterdir()
        if p.is_file() and p.name.startswith(artifact.name + ".")
    )
    return (artifact, *sorted(siblings))


def _onnx_graph(artifact: Path, spec: InputSpec, outputs: pytree.TreeSpec) -> Any:
    """The ONNX graph facts of an artifact exported by aitune_fp (inputs named after the
    spec, outputs ``output_0`` … in the eager output's pytree order)."""
    from aitune_fp.effects.backends._export import OutputLayout
    from aitune_fp.effects.backends._onnx import OnnxGraph

    labels = tuple(f"output_{i}" for i in range(outputs.num_leaves))
    return OnnxGraph(artifact, spec.names, labels, OutputLayout(outputs, labels))


def _aot_inductor(
    config: Any,
    artifact: Path,
    spec: InputSpec,
    outputs: pytree.TreeSpec,
    device: torch.device,
    work_dir: Path,
    log: BuildLog,
) -> Built:
    from aitune_fp.effects.backends.aot_inductor import _package_runner

    index = device.index if device.index is not None else -1
    compiled = torch._inductor.aoti_load_package(str(artifact), device_index=index)
    return Built(_package_runner(compiled), artifact=artifact, info={"device": str(device)})


def _onnxruntime(
    config: Any,
    artifact: Path,
    spec: InputSpec,
    outputs: pytree.TreeSpec,
    device: torch.device,
    work_dir: Path,
    log: BuildLog,
) -> Built:
    from aitune_fp.effects.backends.ort import _cpu_runner, _cuda_runner, _input_positions

    reason = config.unavailable_reason(device)
    if reason is not None:
        raise RuntimeError(reason)
    graph = _onnx_graph(artifact, spec, outputs)
    session = config._session(graph, spec, device, work_dir)
    positions = _input_positions(graph, [i.name for i in session.get_inputs()])
    if device.type == "cuda":
        runner = _cuda_runner(session, graph, positions, spec, device)
    else:
        runner = _cpu_runner(session, graph, positions, spec)
    info = {"provider": config.resolved_provider(device), "device": str(device)}
    return Built(runner, artifact=artifact, info=info)


def _tensorrt(
    config: Any,
    artifact: Path,
    spec: InputSpec,
    outputs: pytree.TreeSpec,
    device: torch.device,
    work_dir: Path,
    log: BuildLog,
) -> Built:
    from aitune_fp.effects.backends.trt import _EngineRunner

    reason = config.unavailable_reason(device)
    if reason is not None:
        raise RuntimeError(reason)
    graph = _onnx_graph(artifact, spec, outputs)
    runner = _EngineRunner(artifact.read_bytes(), graph, spec, device, log)
    return Built(runner, runner.close, artifact=artifact, info={"device": str(device)})


LOADERS: Final[dict[str, Loader]] = {
    "aot_inductor": _aot_inductor,
    "onnxruntime": _onnxruntime,
    "tensorrt": _tensorrt,
}


def loadable(config: Backend) -> bool:
    """Whether ``config``'s artifacts can be loaded back (own ``load`` or a known kind)."""
    return callable(getattr(config, "load", None)) or config.name in LOADERS


def load_built(
    config: Backend,
    artifact: Path,
    spec: InputSpec,
    outputs: pytree.TreeSpec,
    device: torch.device,
    work_dir: Path,
) -> IOResult[Built, BackendFailure]:
    """The runner of ``config``'s ``artifact`` on ``device`` (a failure when it cannot load)."""
    own = getattr(config, "load", None)
    loader: Loader | None = (
        (lambda _c, *rest: own(*rest[:-1])) if callable(own) else LOADERS.get(config.name)
    )
    if loader is None:
        return unavailable(config.describe(), f"{config.name} artifacts cannot be loaded back")
    work_dir.mkdir(parents=True, exist_ok=True)

    def load(log: BuildLog) -> Built:
        log.write(f"loading {artifact} for {config.describe()} on {device}")
        return loader(config, artifact, spec, outputs, device, work_dir, log)

    return guarded_build(config.describe(), work_dir, load)


def output_spec(outputs: Any) -> pytree.TreeSpec:
    """The pytree spec of one output of a module (what :func:`load_built` rebuilds)."""
    return pytree.tree_flatten(outputs)[1]


def dump_output_spec(spec: pytree.TreeSpec) -> str:
    """An output spec as JSON text (``torch.utils._pytree.treespec_dumps``)."""
    return pytree.treespec_dumps(spec)


def read_output_spec(text: str) -> pytree.TreeSpec:
    """An output spec from :func:`dump_output_spec`'s text; ``ValueError`` when malformed."""
    try:
        return pytree.treespec_loads(text)
    except Exception as error:
        raise ValueError(f"the stored output structure cannot be read: {error}") from None


def _tuples(value: Any) -> Any:
    """JSON lists back to the tuples frozen configs hold (recursively)."""
    if isinstance(value, list | tuple):
        return tuple(_tuples(v) for v in value)
    return value


def backend_from_config(kind: str, config: Mapping[str, Any]) -> Backend:
    """The backend config of ``kind`` with the stored ``config`` fields (JSON lists read as
    tuples; fields that are not constructor arguments, such as ``name``, ignored).

    >>> backend_from_config("onnxruntime", {"name": "onnxruntime", "intra_op_threads": 2,
    ...                                     "session_config": [["a", "b"]]}).describe()
    "onnxruntime(intra_op_threads=2, session_config=(('a', 'b'),))"
    """
    from aitune_fp.effects.backends.registry import BACKEND_TYPES, backend_by_name

    kind_type = BACKEND_TYPES.get(kind)
    if kind_type is None:
        return backend_by_name(kind)  # raises with the known names
    init = {f.name for f in dataclasses.fields(kind_type) if f.init}
    return backend_by_name(kind, **{k: _tuples(v) for k, v in config.items() if k in init})
