"""``aitune_fp.serve``: serve a saved tuned model over HTTP on Ray Serve, in one call.

Rules:
- the folder is read first (manifest, run record: :func:`~aitune_fp.shell.serving.saved.
  read_saved`), so a folder that is not a save fails before Ray starts;
- batching comes from the tune (:mod:`aitune_fp.core.serving.plan`); ``max_batch_size`` and
  ``batch_wait_ms`` override it;
- ``module`` is the module the folder was tuned from: needed for a recipe save, and it makes
  requests outside the tuned envelope run eagerly instead of being refused;
  ``eager=True`` serves that module itself with the same batching (a control);
- the call returns once the application answers; :meth:`Serving.stop` ends it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aitune_fp.shell.serving.ray_serve import ServeOptions, Serving, start
from aitune_fp.shell.serving.saved import Saved, Served, read_saved


def serve(
    path: str | Path,
    module: Any = None,
    *,
    address: str | None = None,
    host: str = "127.0.0.1",
    port: int = 8000,
    replicas: int = 1,
    device: str | None = None,
    max_batch_size: int | None = None,
    batch_wait_ms: float | None = None,
    eager: bool = False,
    expected_digest: str | None = None,
    num_cpus: int | None = None,
    replica_cpus: float = 1.0,
    name: str = "aitune_fp",
) -> Serving[Saved]:
    """Serve the tuned model saved at ``path`` on Ray Serve (see the module rules).

    ``address`` joins a Ray cluster (default: start a local Ray with ``num_cpus``);
    ``host``/``port`` is where HTTP listens; ``replicas`` and ``device`` say how many copies
    run and where. Returns a :class:`Serving` (``.url``, ``.saved.plan``, ``.stop()``).
    """
    for label, value in (("replicas", replicas), ("port", port)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{label} must be a positive integer, got {value!r}")
    saved = read_saved(path, max_batch_size=max_batch_size, batch_wait_ms=batch_wait_ms)
    served = Served(str(Path(path).resolve()), device, module, eager, expected_digest)
    options = ServeOptions(
        address=address,
        host=host,
        port=port,
        replicas=replicas,
        replica_cpus=replica_cpus,
        num_cpus=num_cpus,
        name=name,
    )
    return start(served, saved, options)
