"""Inductor's CPU vector-ISA probe, started as early as the workers' fork server can.

Rules:
- the server imports this module right after ``torch`` (:func:`~.server.wanted`), before
  its other preloads: importing it starts the probe in a thread of its own
  (:func:`~aitune_fp.effects.machine.preload.probe_started`), so its compiler runs and
  child processes overlap every import that follows; :mod:`.compiler_imports`, imported
  last, joins it, so the server never forks while the thread lives;
- ``AITUNE_FP_WARM_COMPILERS=0`` starts nothing (as it turns :mod:`.compiler_imports` off).
"""

from __future__ import annotations

import os
import threading

from aitune_fp.effects.machine.preload import probe_started

PROBING: threading.Thread | None = (
    probe_started() if os.environ.get("AITUNE_FP_WARM_COMPILERS", "1") != "0" else None
)
"""The probe's thread while it runs (``None`` when turned off); joined by
:mod:`.compiler_imports`."""
