"""The public module for backend authors: everything a backend written in its own file
needs, in one stable place (docs/backends.md, "Adding a backend").

Rules:
- a backend imports from here only: ``from aitune_fp.backends import ConfigIdentity,
  Declaration, …``; the modules these names live in (``aitune_fp.effects…``) are
  internal and may move between releases, these names may not;
- the promise: a name in ``__all__`` keeps its meaning and its signature's required
  parameters within a major version; a field or parameter may be added with a default;
  a name leaves only after one release in which using it warns (``DeprecationWarning``),
  as the old paths below do now;
- the old paths the previous release documented keep working for one release with a
  ``DeprecationWarning``: ``aitune_fp.effects.inputs.Samples`` (and the other names that
  module had) and ``aitune_fp.effects.backends._guard``.

>>> import aitune_fp.backends as b
>>> sorted(b.__all__)[:4]
['Backend', 'BackendFailure', 'BuildLog', 'Built']
"""

from __future__ import annotations

from aitune_fp.core.records import BackendFailure
from aitune_fp.effects.backends._build_guard import BuildLog, available_build, unavailable
from aitune_fp.effects.backends.base import (
    Backend,
    Built,
    ConfigIdentity,
    Declaration,
    Library,
    LoadRequest,
)
from aitune_fp.effects.inputs.samples import Samples
from aitune_fp.effects.inputs.spec import InputSpec

__all__ = [
    "Backend",
    "BackendFailure",
    "BuildLog",
    "Built",
    "ConfigIdentity",
    "Declaration",
    "InputSpec",
    "Library",
    "LoadRequest",
    "Samples",
    "available_build",
    "unavailable",
]
