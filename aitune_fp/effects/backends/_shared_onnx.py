"""One ONNX translation per shared program, reused by every ONNX backend of the run.

Rules:
- ONNX Runtime (each of its variants), OpenVINO and TensorRT translate the same shared
  ``torch.export`` program (:mod:`._shared_export`) to ONNX with the same names; the
  translation (the dynamo exporter's decompositions, translation and graph optimisation)
  takes about 1.5 s of CPU for the demo transformer, and each backend paid it again;
- the translation is shared through the same folder as the programs: an entry is
  ``<folder>/<program key>.onnx-<form key>/`` holding the exported files (``model.onnx``
  and any external-data file beside it) and ``entry.json`` (their sizes and sha256),
  written in a staging folder and renamed into place (:mod:`aitune_fp.effects.atomic`); the
  form key (:func:`form_key`) is a sha256 over the input and output names, the exporter's
  versions (torch, onnxscript) and :data:`FORM`, so a program exported under other names or
  by another exporter never reuses it;
- it is shared only for a program stored in the shared folder
  (:class:`~._shared_export.SharedProgram`: its key and its file's sha256), and a
  translation is reused only for the very program it was made from: the entry records the
  program's sha256, and one made from another program stored under the same key (the
  stored program was discarded and exported again, e.g. because a library patched where
  the key cannot see it made it compute something else) is discarded and translated
  afresh;
- an entry is used only when it is sealed (exactly its listed files) and a private copy of
  them, made into the backend's own folder, verifies; a missing, partial or altered entry
  is removed and the program translated afresh (and stored again): a bad entry never fails
  a build; a translation that cannot be stored is logged and used unshared. What a reused
  graph computes is checked as every graph is, by the backend's validation;
- one translation at a time per entry: the lookup, the translation and the store hold an
  exclusive lock on ``<entry>.lock`` (``flock``: released by the kernel when its holder
  dies), so two ONNX backends built at once translate once, the second waiting for the
  first's entry; where a lock cannot be had (no ``fcntl``, a folder that refuses it) each
  goes on unlocked, as before;
- the build part ``compile`` times a fresh translation and ``export`` a reuse; the build
  log says which.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import shutil
from collections.abc import Callable, Iterator
from importlib import metadata
from pathlib import Path
from typing import Final

import torch

from aitune_fp.effects.atomic import publish_dir, staging_dir
from aitune_fp.effects.backends._build_guard import BuildLog, first_line
from aitune_fp.effects.backends._shared_export import SharedProgram, current_sharing
from aitune_fp.effects.cache.integrity import FileDigest, check_sealed, digest, private_copy

FORM: Final = "aitune_fp.onnx/1: dynamo exporter, spec input names, output_i"

ENTRY: Final = "entry.json"

ENTRY_FORMAT: Final = "aitune_fp.shared_onnx/1"


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "absent"


def form_key(inputs: tuple[str, ...], outputs: tuple[str, ...]) -> str:
    """The key of a translation's form: the graph's names, the exporter's versions, :data:`FORM`.

    >>> form_key(("input_0",), ("output_0",)) == form_key(("input_0",), ("output_0",))
    True
    >>> form_key(("input_0",), ("output_0",)) == form_key(("x",), ("output_0",))
    False
    """
    facts = [FORM, torch.__version__, _version("onnxscript"), *inputs, "|", *outputs]
    return hashlib.sha256("\n".join(facts).encode()).hexdigest()[:16]


def _read(entry: Path, program_sha256: str, graph: str) -> dict[str, FileDigest] | None:
    """The files an entry's ``entry.json`` lists (``None``: missing, unreadable, of another
    format or another program, or not holding the ``graph`` file)."""
    try:
        data = json.loads((entry / ENTRY).read_text(encoding="utf-8"))
        if data.get("format") != ENTRY_FORMAT or data.get("program") != program_sha256:
            return None
        files = {str(n): FileDigest(**d) for n, d in data["files"].items()}
        return files if graph in files else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _reused(entry: Path, program_sha256: str, path: Path, log: BuildLog) -> bool:
    """Copy a sound entry's files beside ``path`` (verified); ``False`` when there is none
    (a bad one, or one made from another program, is removed)."""
    if not entry.is_dir():
        return False
    files = _read(entry, program_sha256, path.name)
    problem = (
        f"unreadable, made from another program, or without {path.name}"
        if files is None
        else check_sealed(entry, files, ENTRY)
    )
    if files is not None and problem is None:
        with log.timed("export"):
            problem = private_copy(entry, files, path.parent)
        if problem is None:
            log.write(f"onnx: shared, translation reused from {entry}")
            return True
    log.write(f"onnx: discarding the shared translation {entry.name} ({problem}); translating")
    shutil.rmtree(entry, ignore_errors=True)
    return False


def _store(entry: Path, program_sha256: str, path: Path) -> str | None:
    """Store the exported files beside ``path`` (``model.onnx`` and its external data) as
    ``entry``; why not, or ``None``."""
    names = [path.name, *(p.name for p in path.parent.glob(f"{path.name}.*") if p.is_file())]
    try:
        with staging_dir(entry) as staging:
            for name in names:
                shutil.copyfile(path.parent / name, staging / name)
            files = {n: dataclasses.asdict(digest(staging / n)) for n in names}
            record = {
                "format": ENTRY_FORMAT,
                "form": FORM,
                "program": program_sha256,
                "files": files,
            }
            (staging / ENTRY).write_text(json.dumps(record, indent=2), encoding="utf-8")
            publish_dir(staging, entry)
        return None
    except Exception as error:
        return first_line(error)


@contextlib.contextmanager
def _held(lock: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``lock`` while the block runs (none where it cannot be had)."""
    try:
        import fcntl

        lock.parent.mkdir(parents=True, exist_ok=True)
        fd = open(lock, "a+b")  # noqa: SIM115 - closed below, after the unlock
    except (ImportError, OSError):
        yield
        return
    with fd:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            yield
            return
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)


def shared_translation(
    program: SharedProgram | None,
    form: str,
    path: Path,
    translate: Callable[[], None],
    log: BuildLog,
) -> str:
    """``path`` holding the program's ONNX graph: a shared translation copied in, or
    ``translate()`` run (and stored for the others). Says which: ``"shared"`` or
    ``"fresh"``."""
    sharing = current_sharing()
    if sharing is None or program is None:
        translate()
        return "fresh"
    entry = sharing.folder / f"{program.key}.onnx-{form}"
    with _held(entry.with_name(entry.name + ".lock")):
        if _reused(entry, program.sha256, path, log):
            return "shared"
        translate()
        problem = _store(entry, program.sha256, path)
    if problem is None:
        log.write(f"onnx: fresh, translation stored in {entry} for the other backends")
    else:
        log.write(f"onnx: fresh, translation not shared (cannot store it: {problem})")
    return "fresh"
