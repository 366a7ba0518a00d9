"""The fleet's output folder: each job's files and the index ``fleet.json``.

Rules:
- a job's files go to ``OUT/<model>/<target>/<strategy>/``; they are written to a sibling
  temporary folder first and swapped in whole, so a folder holds one job's run, never a
  mix of two attempts, and a killed plan leaves no half-written ``run.json``;
- ``fleet.json`` is written to a temporary file in the same folder and renamed over the old
  one (atomic on POSIX), after every job;
- reading tolerates absence and damage: a missing or unreadable index or run is ``None``.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path

from aitune_fp.core.fleet.index import FleetIndex, decode_index, encode_index
from aitune_fp.core.record.run_record import RunRecord, loads

INDEX_NAME = "fleet.json"


def write_index(out: Path, index: FleetIndex) -> Path:
    """Write ``index`` to ``out/fleet.json`` atomically; returns the path.

    >>> import tempfile
    >>> out = Path(tempfile.mkdtemp()) / "fleet"
    >>> write_index(out, FleetIndex((), plan="p", executor="ray")).name
    'fleet.json'
    >>> read_index(out), sorted(p.name for p in out.iterdir())
    (FleetIndex(entries=(), plan='p', executor='ray'), ['fleet.json'])
    """
    out.mkdir(parents=True, exist_ok=True)
    text = json.dumps(encode_index(index), indent=1, sort_keys=True) + "\n"
    handle, tmp = tempfile.mkstemp(prefix=".fleet.", suffix=".tmp", dir=out)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(tmp, out / INDEX_NAME)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return out / INDEX_NAME


def read_index(out: Path) -> FleetIndex | None:
    """The index stored in ``out``, or ``None`` when there is none or it is damaged.

    >>> import tempfile
    >>> out = Path(tempfile.mkdtemp())
    >>> read_index(out) is None
    True
    >>> _ = (out / INDEX_NAME).write_text("{")
    >>> read_index(out) is None
    True
    """
    try:
        return decode_index(json.loads((out / INDEX_NAME).read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None


def read_run(path: Path) -> RunRecord | None:
    """The run stored at ``path``, or ``None`` when missing or unreadable.

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "run.json"
    >>> read_run(path) is None
    True
    >>> _ = path.write_text('{"format": "not a run"}')
    >>> read_run(path) is None
    True
    """
    try:
        return loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _staged(folder: Path, files: Iterable[tuple[str, bytes]]) -> Path:
    """A new sibling folder of ``folder`` holding ``files``; a name outside it is refused."""
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        for name, data in files:
            target = (staging / name).resolve()
            if staging.resolve() not in target.parents:
                raise ValueError(f"job file {name!r} is outside its folder")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return staging


def write_job_files(folder: Path, files: Iterable[tuple[str, bytes]]) -> Path:
    """Replace ``folder`` with exactly ``files`` (relative names), swapped in whole.

    >>> import tempfile
    >>> job = Path(tempfile.mkdtemp()) / "mlp" / "cpu"
    >>> _ = write_job_files(job, [("run.json", b"{}"), ("saved/manifest.json", b"{}")])
    >>> _ = write_job_files(job, [("run.json", b"[]")])
    >>> sorted(p.name for p in job.rglob("*")), (job / "run.json").read_bytes()
    (['run.json'], b'[]')
    >>> write_job_files(job, [("../escape", b"")])
    Traceback (most recent call last):
    ...
    ValueError: job file '../escape' is outside its folder
    >>> sorted(p.name for p in job.parent.iterdir())
    ['cpu']
    """
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = _staged(folder, files)
    try:
        old = None
        if folder.exists():
            old = folder.parent / f".{folder.name}.old"
            shutil.rmtree(old, ignore_errors=True)
            folder.rename(old)
        staging.rename(folder)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return folder
