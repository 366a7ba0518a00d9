"""``aitune-fp export DIR --triton REPO``: a Triton model repository for a saved tuned model.

Rules:
- the repository gets ``REPO/<name>/config.pbtxt`` and ``REPO/<name>/<version>/<model file>``
  (``model.onnx`` with its external-data files beside it, or ``model.plan``); the model
  folder is written to a staging folder and renamed into place, and an existing model
  folder is replaced only with ``force``;
- inputs come from the saved input spec; outputs (names ``output_0`` …, dtypes, dims) from
  running the loaded model on zeros twice — batch 1 with every dynamic axis at its minimum,
  batch 2 at its maximum — so an output axis that changed is dynamic (``-1``), and the first
  axis must follow the batch;
- the config text is parsed with Triton's own schema
  (``tritonclient.grpc.model_config_pb2.ModelConfig``) before anything is written; without
  ``tritonclient`` the export stops with one line naming the ``triton`` extra;
- what Triton cannot run (a recipe, an AOTInductor package, a batch axis other than the
  first) is refused with one line: ``not exportable to Triton: …``.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import torch
import torch.utils._pytree as pytree

from aitune_fp.core.serving.schema import TensorSig
from aitune_fp.core.serving.triton import (
    NotExportable,
    TritonModel,
    config_pbtxt,
    model_name,
    triton_platform,
)
from aitune_fp.effects.atomic import publish_dir, staging_dir
from aitune_fp.effects.cache.artifacts import artifact_files
from aitune_fp.effects.serving.codec import input_sigs
from aitune_fp.shell.persist import load
from aitune_fp.shell.serving.saved import Saved, read_saved
from aitune_fp.shell.tuned_module import TunedModule

TRITON_HINT: Final = (
    "the Triton export checks config.pbtxt with Triton's schema: pip install 'aitune_fp[triton]'"
)


class ExportError(RuntimeError):
    """The export could not be written; the message is one line."""


def parse_config(text: str) -> Any:
    """``text`` parsed as Triton's ``ModelConfig`` (``ExportError`` when it does not parse
    or ``tritonclient`` is missing)."""
    try:
        from google.protobuf import text_format
        from tritonclient.grpc import model_config_pb2
    except ImportError:
        raise ExportError(TRITON_HINT) from None
    try:
        return text_format.Parse(text, model_config_pb2.ModelConfig())
    except text_format.ParseError as error:
        raise ExportError(f"config.pbtxt does not parse with Triton's schema: {error}") from None


def _zeros(tuned: TunedModule, batch: int, which: str) -> Any:
    spec = tuned.samples.spec
    sizes = spec.sizes(which)
    tensors = {
        t.name: torch.zeros(t.shape(batch, spec.batch_axis, sizes), dtype=getattr(torch, t.dtype))
        for t in spec.tensors
    }
    device = torch.device(str(tuned.built.info.get("device", "cpu")))
    args = tuple(tensors[n].to(device) for n in spec.positional)
    kwargs = {k: tensors[k].to(device) for k in spec.keywords}
    with torch.inference_mode():
        return pytree.tree_leaves(tuned(*args, **kwargs))


def _output_sigs(tuned: TunedModule) -> tuple[TensorSig, ...]:
    """The outputs' signatures found by running ``tuned`` on zeros (see the module rules)."""
    top = 2 if (tuned.max_batch_size or 2) >= 2 else 1
    small, large = _zeros(tuned, 1, "min"), _zeros(tuned, top, "max")
    sigs = []
    for i, (a, b) in enumerate(zip(small, large, strict=True)):
        name = f"output_{i}"
        if not isinstance(a, torch.Tensor) or a.dim() == 0 or a.shape[0] != 1 or b.shape[0] != top:
            raise NotExportable(
                f"not exportable to Triton: {name} does not carry the batch on its first axis"
            )
        dims = tuple(-1 if x != y else int(x) for x, y in zip(a.shape, b.shape, strict=True))
        sigs.append(TensorSig(name, str(a.dtype).removeprefix("torch."), (-1, *dims[1:])))
    return tuple(sigs)


def _triton_model(
    saved: Saved, outputs: tuple[TensorSig, ...], name: str, device: str, instances: int
) -> TritonModel:
    """The Triton model of ``saved`` (platform, tensors, batching, instances)."""
    platform, filename = triton_platform(saved.kind, saved.artifact)
    if saved.spec.batch_axis != 0:
        raise NotExportable(
            f"not exportable to Triton: the batch is axis {saved.spec.batch_axis}; Triton "
            "batches along the first axis"
        )
    gpu = torch.device(device)
    gpus = (gpu.index or 0,) if gpu.type == "cuda" else ()
    return TritonModel(
        name, platform, filename, input_sigs(saved.spec), outputs, saved.plan, gpus, instances
    )


def _publish(
    target: Path, text: str, artifact: Path | None, filename: str, version: int, folder: Path
) -> None:
    """Write the model folder ``target``: its config and, under ``version``, the artifact
    as ``filename`` with its external-data files (staged, then renamed into place); a
    model loaded from ``folder`` without an artifact file is an ``ExportError``."""
    if artifact is None or not artifact.is_file():
        raise ExportError(f"{folder}: the loaded model has no artifact file to export")
    with staging_dir(target) as staging:
        (staging / "config.pbtxt").write_text(text, encoding="utf-8")
        files = staging / str(version)
        files.mkdir()
        for file in artifact_files(artifact):  # external data keeps the name it is known by
            shutil.copy2(file, files / _served_name(file, artifact, filename))
        publish_dir(staging, target)


def _served_name(file: Path, artifact: Path, filename: str) -> str:
    """The name ``file`` of the artifact gets in the version folder: the artifact's is
    ``filename``; an OpenVINO IR's weights (``<xml>.bin``) follow it as ``<stem>.bin``,
    where OpenVINO looks for them; external data keeps its name (the model refers to it).

    >>> _served_name(Path("w/m.xml.bin"), Path("w/m.xml"), "model.xml")
    'model.bin'
    """
    if file == artifact:
        return filename
    if file.name == f"{artifact.name}.bin" and filename.endswith(".xml"):
        return filename.removesuffix(".xml") + ".bin"
    return file.name


@dataclass(frozen=True, slots=True)
class TritonOptions:
    """How :func:`export_triton` writes the model folder: its ``name`` (default: the
    save's folder name), the ``device`` it runs on (default: the save's), ``instances``,
    the model ``version``, the dynamic batching (``max_batch_size``, ``batch_wait_ms``;
    default: the save's plan) and ``force`` (replace an existing folder)."""

    name: str | None = None
    device: str | None = None
    instances: int = 1
    version: int = 1
    max_batch_size: int | None = None
    batch_wait_ms: float | None = None
    force: bool = False


def export_triton(path: str | Path, repo: str | Path, **options: Any) -> Path:
    """Write the Triton model folder for the save at ``path`` into ``repo``; returns it.
    ``options`` are :class:`TritonOptions`' fields (``name``, ``device``, ``instances``,
    ``version``, ``max_batch_size``, ``batch_wait_ms``, ``force``); an unknown one is a
    ``TypeError``.

    What is not a save is refused before anything is written:

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> export_triton(folder / "no-save", folder / "repo")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    aitune_fp.shell.sealed.LoadError: .../no-save is not an aitune_fp save: it has no manifest.json
    >>> (folder / "repo").exists()
    False
    """
    o = TritonOptions(**options)
    folder = Path(path)
    saved = read_saved(folder, max_batch_size=o.max_batch_size, batch_wait_ms=o.batch_wait_ms)
    triton_platform(saved.kind, saved.artifact)  # refuse before loading anything
    label = model_name(o.name or folder.resolve().name)
    target = Path(repo) / label
    if target.exists() and not o.force:
        raise ExportError(f"{target} exists: pass force=True (--force) to replace it")
    run_on = o.device or saved.device
    tuned = load(folder, device=run_on)  # verifies the folder; its private copy is written
    try:
        model = _triton_model(saved, _output_sigs(tuned), label, run_on, o.instances)
        text = config_pbtxt(model)
        parse_config(text)
        _publish(target, text, tuned.built.artifact, model.filename, o.version, folder)
    finally:
        tuned.close()
    return target
