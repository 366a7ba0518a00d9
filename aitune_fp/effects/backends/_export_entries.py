"""The shared exports' entries on disk: their key, and how one is stored, read and trusted.

Rules (of :mod:`._shared_export`): an entry is ``<folder>/<key>/`` holding ``program.pt2``
and ``entry.json`` (its size and sha256), written in a staging folder and renamed into
place; the key is a sha256 over the module's digest and training flag, the input spec, the
example batch (shapes, dtypes and bytes), the batch bound, the device, the torch version and
:data:`FORM`; an entry is used only when it is sealed, a private copy verifies and loads,
and the loaded program computes what the module computes now on the example batch.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import torch

from aitune_fp.effects.atomic import publish_dir, staging_dir
from aitune_fp.effects.backends._build_guard import first_line
from aitune_fp.effects.cache.integrity import FileDigest, check_sealed, digest, private_copy
from aitune_fp.effects.cache.probe import outputs_differ
from aitune_fp.effects.inputs.containers import to_stored
from aitune_fp.effects.inputs.samples import Batch, InputSpec

FORM: Final = "aitune_fp.export/1: module call, non-strict, batch + spec dims"
"""The program form; part of every key, so a change of form never reuses old programs."""


PROGRAM: Final = "program.pt2"


ENTRY: Final = "entry.json"


ENTRY_FORMAT: Final = "aitune_fp.shared_export/1"


ModelDigest = Callable[[torch.nn.Module], str]
"""A module's digest of code and weights (the artifact cache's; passed in, so this module
needs no import of the cache, which imports the backends)."""


def device_facts(device: torch.device) -> str:
    """The device as the key sees it: a CUDA device with its index and model name, any
    other by its name.

    >>> device_facts(torch.device("cpu"))
    'cpu'
    """
    if device.type == "cuda" and torch.cuda.is_available():
        index = device.index if device.index is not None else torch.cuda.current_device()
        return f"cuda:{index}|{torch.cuda.get_device_name(index)}"
    return str(device)


def batch_digest(batch: Batch) -> str:
    """sha256 of the example batch's names, shapes, dtypes and bytes.

    >>> from aitune_fp.effects.inputs.samples import make_batch, normalise_samples
    >>> def of(*rows):
    ...     return batch_digest(make_batch(normalise_samples([torch.tensor([rows])]), 1))
    >>> of(1.0, 2.0) == of(1.0, 2.0), of(1.0, 2.0) == of(1.0, 3.0)
    (True, False)
    """
    h = hashlib.sha256()
    names = [f"#{i}" for i in range(len(batch.args))] + list(batch.kwargs)
    for name, t in zip(names, batch.flat(), strict=True):
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
        flat = t.detach().to("cpu").contiguous().reshape(-1)
        if flat.numel():
            h.update(flat.view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def export_key(
    model: torch.nn.Module,
    batch: Batch,
    spec: InputSpec,
    bound: int,
    device: torch.device,
    model_digest: ModelDigest,
) -> str:
    """The key of the program :func:`export_program` makes from these (see the rules)."""
    parts = {
        "form": FORM,
        "model": model_digest(model),
        "training": model.training,
        "inputs": repr(spec),
        "batch": batch_digest(batch),
        "bound": bound,
        "device": device_facts(device),
        "torch": torch.__version__,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:32]


def read_entry(folder: Path, key: str) -> dict[str, FileDigest] | None:
    """The file digests an entry's ``entry.json`` records, or ``None`` when it is missing,
    unreadable, of another format or key, or lists anything besides the program.

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> read_entry(folder, "k") is None
    True
    >>> files = {PROGRAM: {"size": 3, "sha256": "ab"}}
    >>> record = {"format": ENTRY_FORMAT, "key": "k", "files": files}
    >>> _ = (folder / ENTRY).write_text(json.dumps(record))
    >>> list(read_entry(folder, "k")), read_entry(folder, "other key") is None
    (['program.pt2'], True)
    """
    try:
        data = json.loads((folder / ENTRY).read_text(encoding="utf-8"))
        if data.get("format") != ENTRY_FORMAT or data.get("key") != key:
            return None
        files = {str(n): FileDigest(**d) for n, d in data["files"].items()}
        return files if set(files) == {PROGRAM} else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def load_entry(entry: Path, key: str, work_dir: Path) -> tuple[Any, str | None]:
    """The program of ``entry`` loaded from a verified private copy, or why not."""
    files = read_entry(entry, key)
    if files is None:
        return None, "unreadable entry.json"
    problem = check_sealed(entry, files, ENTRY)
    copy = work_dir / f"shared-export-{uuid.uuid4().hex[:8]}"
    try:
        problem = problem or private_copy(entry, files, copy)
        if problem is not None:
            return None, problem
        try:
            return torch.export.load(str(copy / PROGRAM)), None
        except Exception as error:
            return None, f"it does not load: {first_line(error)}"
    finally:
        shutil.rmtree(copy, ignore_errors=True)


def behaves_otherwise(program: Any, model: torch.nn.Module, batch: Batch) -> str | None:
    """Why the stored ``program`` is not ``model`` on ``batch`` (``None``: it computes the
    same outputs, within the probe's run-to-run tolerance)."""
    try:
        with torch.inference_mode():
            got = batch.call(program.module())
            want = batch.call(model)
    except Exception as error:
        return f"it does not run on the example batch: {first_line(error)}"
    problem = outputs_differ(got, to_stored(want))
    return None if problem is None else f"it computes another model ({problem})"


def store_entry(entry: Path, key: str, program: Any) -> str | None:
    """Write ``program`` as the entry ``key`` (atomically); why not, or ``None``."""
    try:
        with staging_dir(entry) as staging:
            torch.export.save(program, str(staging / PROGRAM))
            record = {
                "format": ENTRY_FORMAT,
                "key": key,
                "form": FORM,
                "files": {PROGRAM: dataclasses.asdict(digest(staging / PROGRAM))},
            }
            (staging / ENTRY).write_text(json.dumps(record, indent=2), encoding="utf-8")
            publish_dir(staging, entry)
        return None
    except Exception as error:
        return first_line(error)
