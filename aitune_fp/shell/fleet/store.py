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
    """Write ``index`` to ``out/fleet.json`` atomically; returns the path."""
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
    """The index stored in ``out``, or ``None`` when there is none or it is damaged."""
    try:
        return decode_index(json.loads((out / INDEX_NAME).read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None


def read_run(path: Path) -> RunRecord | None:
    """The run stored at ``path``, or ``None`` when missing or unreadable."""
    try:
        return loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def write_job_files(folder: Path, files: Iterable[tuple[str, bytes]]) -> Path:
    """Replace ``folder`` with exactly ``files`` (relative names), swapped in whole."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        for name, data in files:
            target = (staging / name).resolve()
            if staging.resolve() not in target.parents:
                raise ValueError(f"job file {name!r} is outside its folder")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
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
