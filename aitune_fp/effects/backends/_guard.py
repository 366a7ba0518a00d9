"""Deprecated home of the build guard: ``BuildLog`` and ``available_build`` are in
:mod:`aitune_fp.backends` (the public module) and ``._build_guard`` (their home).

Rule: importing this module warns once (``DeprecationWarning``) and re-exports what the
documented one-file backend example of the previous release imported from it; it goes in
the release after this one.
"""

from __future__ import annotations

import warnings

from aitune_fp.effects.backends._build_guard import (
    BuildLog,
    available_build,
    first_line,
    guarded_build,
    unavailable,
)

warnings.warn(
    "aitune_fp.effects.backends._guard is deprecated: import BuildLog and available_build "
    "from aitune_fp.backends",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = ["BuildLog", "available_build", "first_line", "guarded_build", "unavailable"]
