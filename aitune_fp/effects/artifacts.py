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
  ``BackendFailure`` at stage ``build`` whose message says what could not be loaded; a
  backend that cannot run on the device fails at once with its reason, as its build would;
- nothing is unpickled: packages and ONNX files are read by their own runtimes, and an
  inference SDK is imported only inside the function that needs it;
- the files of an artifact are the artifact, its siblings named ``<artifact>.*`` and, for
  an ONNX model, every external-data file its tensors name (:func:`external_data`); a
  location that is not a plain file name next to the model (absolute, ``..``, a folder)
  is refused with ``ValueError`` before any runtime opens the model.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import torch
import torch.utils._pytree as pytree
from returns.io import IOResult

from aitune_fp.core.records import BackendFailure
from aitune_fp.effects.backends._guard import BuildLog, available_build, unavailable
from aitune_fp.effects.backends.base import Backend, Built
from aitune_fp.effects.inputs import InputSpec
from aitune_fp.effects.integrity import safe_name


def external_data(artifact: Path) -> tuple[str, ...]:
    """The external-data file names an ONNX model's tensors point to (``()`` for other
    artifacts, or when the ``onnx`` package is not installed); ``ValueError`` for a
    location that is not a plain file name in the model's folder."""
    if artifact.suffix != ".onnx":
        return ()
    try:
        import onnx
        from onnx.external_data_helper import _get_all_tensors
    except ImportError:
        return ()
    model = onnx.load(str(artifact), load_external_data=False)
    names = set()
    for tensor in _get_all_tensors(model):
        for entry in tensor.external_data:
            if entry.key != "location":
                continue
            location = entry.value
            if not safe_name(location):
                raise ValueError(
                    f"{artifact.name} points to external data {location!r} outside its folder"
                )
            names.add(location)
    return tuple(sorted(names))


def artifact_files(artifact: Path) -> tuple[Path, ...]:
    """The artifact and the files that belong to it (``model.onnx.data`` for
    ``model.onnx``, and every external-data file it names), the artifact first, then by
    name."""
    siblings = {
        p
        for p in artifact.parent.iterdir()
        if p.is_file() and p.name.startswith(artifact.name + ".")
    }
    siblings.update(artifact.parent / n for n in external_data(artifact))
    siblings.discard(artifact)
    return (artifact, *sorted(siblings))


def _onnx_graph(artifact: Path, spec: InputSpec, outputs: pytree.TreeSpec) -> Any:
    """The ONNX graph facts of an artifact exported by aitune_fp (inputs named after the
    spec, outputs ``output_0`` … in the eager output's pytree order)."""
    from aitune_fp.effects.backends._export import OutputLayout
    from aitune_fp.effects.backends._onnx import OnnxGraph

    labels = tuple(f"output_{i}" for i in range(outputs.num_leaves))
    return OnnxGraph(artifact, spec.names, labels, OutputLayout(outputs, labels))


@dataclass(frozen=True, slots=True)
class _Request:
    """What loading needs besides the config: the artifact, its call's shape, where to run."""

    artifact: Path
    spec: InputSpec
    outputs: pytree.TreeSpec
    device: torch.device
    work_dir: Path


def _aot_inductor(config: Any, request: _Request, log: BuildLog) -> Built:
    from aitune_fp.effects.backends.aot_inductor import load_package

    return load_package(request.artifact, request.device)


def _onnxruntime(config: Any, request: _Request, log: BuildLog) -> Built:
    from aitune_fp.effects.backends._ort_runners import session_runner

    spec, device = request.spec, request.device
    graph = _onnx_graph(request.artifact, spec, request.outputs)
    session = config.open_session(graph, spec, device, request.work_dir)
    runner = session_runner(session, graph, spec, device)
    info = {
        "provider": config.resolved_provider(device),
        "providers": list(session.get_providers()),
        "device": str(device),
        "precision": config._precision(device),
    }
    return Built(runner, artifact=request.artifact, info=info)


def _tensorrt(config: Any, request: _Request, log: BuildLog) -> Built:
    from aitune_fp.effects.backends._trt_runtime import EngineRunner

    graph = _onnx_graph(request.artifact, request.spec, request.outputs)
    engine = request.artifact.read_bytes()
    runner = EngineRunner(engine, graph, request.spec, request.device, log)
    precision, source = runner.precision(tf32=bool(getattr(config, "tf32", False)))
    info = {"device": str(request.device), "precision": precision, "precision_source": source}
    return Built(runner, runner.close, artifact=request.artifact, info=info)


Loader = Callable[[Any, _Request, BuildLog], Built]
LOADERS: Final[dict[str, Loader]] = {
    "aot_inductor": _aot_inductor,
    "onnxruntime": _onnxruntime,
    "tensorrt": _tensorrt,
}


def _own_loader(config: Any) -> Loader | None:
    """The config's own ``load`` method as a loader, when it has one."""
    own = getattr(config, "load", None)
    if not callable(own):
        return None
    return lambda _config, r, _log: own(r.artifact, r.spec, r.outputs, r.device, r.work_dir)


def loadable(config: Backend) -> bool:
    """Whether ``config``'s artifacts can be loaded back (own ``load`` or a known kind)."""
    return _own_loader(config) is not None or config.name in LOADERS


def load_built(
    config: Backend,
    artifact: Path,
    spec: InputSpec,
    outputs: pytree.TreeSpec,
    device: torch.device,
    work_dir: Path,
) -> IOResult[Built, BackendFailure]:
    """The runner of ``config``'s ``artifact`` on ``device`` (a failure when it cannot load)."""
    loader = _own_loader(config) or LOADERS.get(config.name)
    if loader is None:
        return unavailable(config.describe(), f"{config.name} artifacts cannot be loaded back")
    request = _Request(artifact, spec, outputs, device, work_dir)

    def load(log: BuildLog) -> Built:
        log.write(f"loading {artifact} for {config.describe()} on {device}")
        return loader(config, request, log)

    return available_build(config, device, work_dir, load)


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
