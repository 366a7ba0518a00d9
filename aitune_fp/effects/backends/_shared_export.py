"""One ``torch.export`` program per model and input spec, shared by every backend that needs it.

Rules:
- the program form is the module's own call (:func:`export_program`): ``torch.export``
  (non-strict) of the module with its positional and keyword inputs, one dynamic ``batch``
  dimension in ``[1, bound]`` and every dynamic dimension of the input spec
  (:func:`~._export.spec_dynamic_shapes`); AOTInductor packages it, the dynamo ONNX
  exporter translates it (ONNX Runtime, TensorRT), Torch-TensorRT compiles it;
- programs are shared through disk, so backends built in separate worker processes share
  them too: the folder is the one :func:`sharing` opened (the candidate runner opens
  ``<cache_dir>/exports``, or ``<run folder>/.exports`` when the run is uncached, with the
  artifact cache's ``model_digest`` of the module's code and weights); with no folder open a
  backend exports for itself;
- an entry is ``<folder>/<key>/`` holding ``program.pt2`` (``torch.export.save``) and
  ``entry.json`` (its size and sha256), written in a staging folder and renamed into
  place (:mod:`aitune_fp.effects.atomic`); the key is a sha256 over the module's digest
  (code and weights, given to :func:`sharing`) and its training flag, the input spec, the
  example batch (shapes, dtypes and bytes), the batch bound, the device, the torch
  version and :data:`FORM`; a module that cannot be keyed (an exotic tensor type) is
  exported unshared;
- an entry is used only when it is sealed, a private copy of its program verifies
  (:mod:`aitune_fp.effects.cache.integrity`) and the loaded program computes what the module
  computes now on the example batch (:func:`~aitune_fp.effects.cache.probe.
  outputs_differ`: the key cannot see a library function patched deep inside a call, the
  program's own run can); the program is loaded from that copy. A missing,
  swapped, corrupt or unloadable entry is removed and the program exported afresh (and
  stored again) — a bad entry is never trusted and never fails a build; a program that
  cannot be stored is logged and used unshared;
- the build part ``export`` times the lookup and load (``shared``) or the export and
  store (``fresh``); the build log names which and ``Built.info["export"]`` keeps it;
- :func:`on_program` runs a backend's step on the program: when the step fails on a
  *shared* program, the backend logs that and retries once on a fresh export of its own
  (``info["export"]`` ``"fresh after shared failed"``), so one backend rejecting the
  shared program fails no other; a failure on a fresh program is the backend's own build
  failure, as is a failing export (each backend that needs the program tries it).
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import torch

from aitune_fp.effects.backends._build_guard import BuildLog, first_line
from aitune_fp.effects.backends._export import (
    UNBOUNDED_BATCH,
    envelope_bound,
    spec_dynamic_shapes,
)
from aitune_fp.effects.backends._export_entries import (
    PROGRAM,
    ModelDigest,
    behaves_otherwise,
    export_key,
    load_entry,
    read_entry,
    store_entry,
)
from aitune_fp.effects.inputs.samples import Batch, InputSpec

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Sharing:
    """Where programs are shared now, and how a module is digested for their keys."""

    folder: Path
    model_digest: ModelDigest


_SHARING: ContextVar[Sharing | None] = ContextVar("aitune_fp_shared_exports", default=None)


@contextlib.contextmanager
def sharing(folder: Path | None, model_digest: ModelDigest) -> Iterator[None]:
    """While open, exports are shared through ``folder`` (``None``: not shared), keyed with
    ``model_digest`` of the module."""
    token = _SHARING.set(None if folder is None else Sharing(folder, model_digest))
    try:
        yield
    finally:
        _SHARING.reset(token)


def current_sharing() -> Sharing | None:
    """Where exports are shared now (``None``: each backend exports alone)."""
    return _SHARING.get()


def exports_folder(work_dir: Path, cache_dir: Path | None) -> Path:
    """Where a candidate built in ``work_dir`` shares its exports: the artifact cache's
    ``exports`` folder, or ``.exports`` next to the backend folders of an uncached run.

    >>> exports_folder(Path("/c/runs/r1/onnxruntime"), Path("/c")).as_posix()
    '/c/exports'
    >>> exports_folder(Path("/tmp/run/onnxruntime"), None).as_posix()
    '/tmp/run/.exports'
    """
    return cache_dir / "exports" if cache_dir is not None else work_dir.parent / ".exports"


@dataclass(frozen=True, slots=True)
class Program:
    """An exported program, whether it was ``"shared"`` (loaded) or ``"fresh"``, its key,
    and the sha256 of its file in the shared folder (``None``: not stored there)."""

    program: Any
    source: str
    key: str | None
    sha256: str | None = None


@dataclass(frozen=True, slots=True)
class SharedProgram:
    """Which stored program a step ran on: its key and its file's sha256 (what a step
    sharing something derived from it keys that on: :mod:`._shared_onnx`)."""

    key: str
    sha256: str


def _stored_sha256(entry: Path, key: str) -> str | None:
    """The sha256 the entry records for its program (``None``: unreadable)."""
    files = read_entry(entry, key)
    return files[PROGRAM].sha256 if files is not None else None


def export_program(
    model: torch.nn.Module, batch: Batch, spec: InputSpec, bound: int = UNBOUNDED_BATCH
) -> Any:
    """``torch.export`` of ``model``'s own call on ``batch``: batch dynamic in
    ``[1, bound]``, every dynamic dimension of ``spec`` over its range, non-strict."""
    shapes = spec_dynamic_shapes(model, spec, bound)
    return torch.export.export(
        model, batch.args, dict(batch.kwargs), dynamic_shapes=shapes, strict=False
    )


def exported(
    model: torch.nn.Module,
    batch: Batch,
    spec: InputSpec,
    device: torch.device,
    work_dir: Path,
    log: BuildLog,
    *,
    bound: int = UNBOUNDED_BATCH,
) -> Program:
    """The shared program for these inputs when a sound one is stored, else a fresh export
    (stored for the others); timed as the build part ``export``."""
    with log.timed("export"):
        shared = current_sharing()
        if shared is None:
            log.write("export: fresh (no shared export folder)")
            return Program(export_program(model, batch, spec, bound), "fresh", None)
        try:
            key = export_key(model, batch, spec, bound, device, shared.model_digest)
        except Exception as error:  # an odd tensor type: export unshared, never fail here
            log.write(f"export: fresh, not shared (cannot key the program: {first_line(error)})")
            return Program(export_program(model, batch, spec, bound), "fresh", None)
        entry = shared.folder / key
        if entry.is_dir():
            program, problem = load_entry(entry, key, work_dir)
            problem = problem or behaves_otherwise(program, model, batch)
            if problem is None:
                log.write(f"export: shared, program {key} loaded from {entry}")
                return Program(program, "shared", key, _stored_sha256(entry, key))
            log.write(f"export: discarding the shared program {key} ({problem}); exporting")
            shutil.rmtree(entry, ignore_errors=True)
        program = export_program(model, batch, spec, bound)
        problem = store_entry(entry, key, program)
        if problem is None:
            log.write(f"export: fresh, program {key} stored in {entry} for the other backends")
            return Program(program, "fresh", key, _stored_sha256(entry, key))
        log.write(f"export: fresh, program {key} not shared (cannot store it: {problem})")
        return Program(program, "fresh", key)


def on_program(
    model: torch.nn.Module,
    batch: Batch,
    spec: InputSpec,
    device: torch.device,
    work_dir: Path,
    log: BuildLog,
    step: Callable[[Any, SharedProgram | None], T],
    *,
    bound: int = UNBOUNDED_BATCH,
) -> tuple[T, str]:
    """``step(program, shared)`` on the shared (or fresh) program and how it was had
    (``"shared"``, ``"fresh"``, ``"fresh after shared failed"``); a step failing on a shared
    program is retried once on a fresh export (see the rules). ``shared`` names the stored
    program it runs on (``None`` for a program not stored in the shared folder, the fresh
    retry's included), so a step can share what it derives from exactly that program
    (:mod:`._shared_onnx`). ``bound`` is
    lowered to the batch envelope open (:func:`~._export.envelope_bound`), and keys the
    program so."""
    bound = envelope_bound(bound)
    had = exported(model, batch, spec, device, work_dir, log, bound=bound)
    try:
        stored = SharedProgram(had.key, had.sha256) if had.key and had.sha256 else None
        return step(had.program, stored), had.source
    except Exception as error:
        if had.source != "shared":
            raise
        log.write(
            f"export: this backend failed on the shared program {had.key} "
            f"({first_line(error)}); retrying on a fresh export of its own"
        )
    with log.timed("export"):
        program = export_program(model, batch, spec, bound)
    return step(program, None), "fresh after shared failed"
