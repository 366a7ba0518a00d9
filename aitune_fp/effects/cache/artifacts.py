"""Load a runner back from a built artifact, without rebuilding it.

Rules:
- a backend's artifact is loaded by the loader its declaration names
  (:class:`~aitune_fp.effects.backends.base.Declaration` ``loader``: an AOTInductor package,
  an ONNX Runtime session, a TensorRT engine, or a user backend's own format); a backend
  declaring none (JIT backends, Torch-TensorRT programs) is rebuilt from the module instead;
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
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
import torch.utils._pytree as pytree
from returns.io import IOResult

from aitune_fp.core.records import BackendFailure
from aitune_fp.effects.backends._build_guard import BuildLog, available_build, unavailable
from aitune_fp.effects.backends.base import Backend, Built, LoadRequest
from aitune_fp.effects.cache.integrity import safe_name
from aitune_fp.effects.inputs.containers import describe, flatten, read_spec
from aitune_fp.effects.inputs.samples import InputSpec


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


def loadable(config: Backend) -> bool:
    """Whether ``config``'s artifacts can be loaded back (its declaration has a loader)."""
    return config.declaration.loader is not None


def load_built(
    config: Backend,
    artifact: Path,
    spec: InputSpec,
    outputs: pytree.TreeSpec,
    device: torch.device,
    work_dir: Path,
) -> IOResult[Built, BackendFailure]:
    """The runner of ``config``'s ``artifact`` on ``device`` (a failure when it cannot load)."""
    loader = config.declaration.loader
    if loader is None:
        return unavailable(config.describe(), f"{config.name} artifacts cannot be loaded back")

    def load(log: BuildLog) -> Built:
        log.write(f"loading {artifact} for {config.describe()} on {device}")
        return loader(config, LoadRequest(artifact, spec, outputs, device, work_dir, log))

    return available_build(config, device, work_dir, load)


def output_spec(outputs: Any) -> pytree.TreeSpec:
    """The pytree spec of one output of a module (what :func:`load_built` rebuilds; its
    containers registered by :func:`~aitune_fp.effects.inputs.containers.flatten`)."""
    return flatten(outputs)[1]


def dump_output_spec(spec: pytree.TreeSpec) -> str:
    """An output spec as JSON text (:func:`~aitune_fp.effects.inputs.containers.describe`)."""
    return describe(spec)


def read_output_spec(text: str) -> pytree.TreeSpec:
    """An output spec from :func:`dump_output_spec`'s text; ``ValueError`` when it cannot
    be rebuilt (:func:`~aitune_fp.effects.inputs.containers.read_spec`)."""
    return read_spec(text)


def _tuples(value: Any) -> Any:
    """JSON lists back to the tuples frozen configs hold (recursively)."""
    if isinstance(value, list | tuple):
        return tuple(_tuples(v) for v in value)
    return value


def backend_from_config(kind: str, config: Mapping[str, Any], source: str | None = None) -> Backend:
    """The backend config of ``kind`` with the stored ``config`` fields (JSON lists read as
    tuples; fields that are not constructor arguments, such as ``name``, ignored). A
    ``source`` (``module:ClassName``, :func:`~.backends.registry.source_of`) that is not a
    shipped backend's names the class to use: its module is imported.

    >>> backend_from_config("onnxruntime", {"name": "onnxruntime", "intra_op_threads": 2,
    ...                                     "session_config": [["a", "b"]]}).describe()
    "onnxruntime(intra_op_threads=2, session_config=(('a', 'b'),))"
    """
    from aitune_fp.effects.backends.registry import backend_by_name, backend_type, backend_types

    shipped = {f"{c.__module__}:{c.__qualname__}" for c in backend_types().values()}
    name = source if source is not None and source not in shipped else kind
    kind_type = backend_type(name)  # raises with the known names
    init = {f.name for f in dataclasses.fields(kind_type) if f.init}
    return backend_by_name(name, **{k: _tuples(v) for k, v in config.items() if k in init})
