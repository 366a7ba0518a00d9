"""The user's samples as an input spec, and the calls a tuned backend is built for.

Rule: the names this package's predecessor, the module ``aitune_fp.effects.inputs``,
exported (``Samples``, ``InputSpec``, ``make_batch``, …) are still importable from it for
one release, each with a ``DeprecationWarning`` naming its new home; a backend author
imports them from :mod:`aitune_fp.backends`, the public module that keeps them stable.
"""

from __future__ import annotations

import warnings
from importlib import import_module
from typing import Any

_MOVED = {
    **dict.fromkeys(("Batch", "Call", "DynamicAxis", "InputSpec", "TensorSpec"), "spec"),
    **dict.fromkeys(("Samples", "batch_at", "make_batch", "normalise_samples"), "samples"),
}


def __getattr__(name: str) -> Any:
    """A name the old ``aitune_fp.effects.inputs`` module had, with a deprecation warning."""
    if name not in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    home = f"{__name__}.{_MOVED[name]}"
    warnings.warn(
        f"aitune_fp.effects.inputs.{name} is deprecated: import it from aitune_fp.backends "
        f"(or {home})",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(import_module(home), name)
