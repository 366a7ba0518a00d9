"""Where one run builds: its own work folder, and whether the artifact cache can be used.

Rules:
- every run gets a fresh folder ``<cache>/runs/<run id>/`` and every backend a sub-folder
  of it named after the backend; builds, artifacts and ``build.log`` live there, so
  nothing one run builds can be overwritten by another run (of the same model or not),
  and a tuned module's artifact stays the file it was validated and timed with;
- a cache folder that cannot be written (or is not a folder) means running uncached, with
  one warning; the run's folder then lives under the system's temporary folder;
- the run id sorts by start time: ``YYYYmmdd-HHMMSS-<pid>-<random>``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from aitune_fp.effects.cache.artifact_cache import unusable_reason

log = logging.getLogger("aitune_fp")


@dataclass(frozen=True, slots=True)
class Workspace:
    """A run's id, its work folder and the artifact cache (``None``: uncached)."""

    run_id: str
    root: Path
    cache_dir: Path | None
    cache_problem: str | None = None

    def backend_dir(self, name: str) -> Path:
        """The work folder of the backend described ``name`` in this run."""
        return self.root / folder_name(name)


def folder_name(name: str) -> str:
    """A file-system-safe, unique folder name for a backend description.

    >>> folder_name("eager")
    'eager'
    >>> folder_name("onnxruntime(provider='tensorrt')")
    'onnxruntime-provider-tensorrt-a8e03b'
    """
    plain = re.sub(r"[^A-Za-z0-9._#-]+", "-", name).strip("-") or "backend"
    if plain == name:
        return name
    return f"{plain}-{hashlib.sha256(name.encode()).hexdigest()[:6]}"


def open_workspace(cache_dir: Path | None) -> Workspace:
    """A fresh workspace for one run, under ``cache_dir`` when it can be written.

    >>> cache = Path(tempfile.mkdtemp())
    >>> space = open_workspace(cache)
    >>> space.root == cache / "runs" / space.run_id, space.root.is_dir(), space.cache_dir == cache
    (True, True, True)
    >>> open_workspace(cache).run_id != space.run_id
    True
    >>> blocked = Path(tempfile.mkstemp()[1])  # a file, not a folder: uncached
    >>> uncached = open_workspace(blocked)
    >>> uncached.cache_dir, uncached.root.is_dir(), uncached.cache_problem is not None
    (None, True, True)
    """
    run_id = f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    problem = None if cache_dir is None else unusable_reason(cache_dir)
    if cache_dir is not None and problem is None:
        root = cache_dir / "runs" / run_id
        try:
            root.mkdir(parents=True)
            return Workspace(run_id, root, cache_dir)
        except OSError as error:
            problem = f"{root} cannot be created: {error.strerror or error}"
    if problem is not None:
        log.warning("artifact cache off for this run (%s): running uncached", problem)
    root = Path(tempfile.mkdtemp(prefix=f"aitune_fp-run-{run_id}-"))
    return Workspace(run_id, root, None, problem)
