"""A save's ``manifest.json`` as a value, encoded and decoded by msgspec.

Rules:
- :class:`Manifest` holds every field ``save`` writes: ``format`` and ``version`` (checked
  first: another format or version is refused by name), ``mode`` (``artifact`` or
  ``recipe``), the ``backend`` (kind, ``module:Class`` source of a backend from outside the
  package, description, key, the config as JSON), the ``artifact`` file, ``device``, the
  ``input_spec`` (as JSON, read by :mod:`aitune_fp.shell.spec_json`), ``outputs``, the
  ``selection``, the source module's digests, ``libraries`` and the ``files`` (name → size
  and sha256);
- the codec is :mod:`aitune_fp.core.record.json_codec`'s (strict: a value of the wrong type
  is a :class:`~aitune_fp.shell.sealed.LoadError` naming the file and the path); a field a
  manifest written before it existed lacks reads as its default;
- :func:`manifest_text` is the JSON text (keys sorted, indented) whose sha256 a user pins.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

import msgspec
from pyrsistent import PMap, pmap

from aitune_fp.core.record.json_codec import from_json, to_json
from aitune_fp.core.records import Selection
from aitune_fp.effects.cache.integrity import FileDigest

FORMAT: Final = "aitune_fp.saved_module"
VERSION: Final = 1
MANIFEST: Final = "manifest.json"


@dataclass(frozen=True, slots=True)
class SavedBackend:
    """The manifest's ``backend``: what ``backend_from_config`` rebuilds it from."""

    kind: str
    config: PMap[str, object]
    source: str | None = None
    description: str = ""
    key: str = ""


@dataclass(frozen=True, slots=True)
class Manifest:
    """Every field of a save's ``manifest.json`` (see the module rules)."""

    mode: str
    backend: SavedBackend
    device: str
    input_spec: PMap[str, object]
    outputs: str
    selection: Selection
    files: PMap[str, FileDigest]
    artifact: str | None = None
    weights_sha256: str | None = None
    model_sha256: str | None = None
    libraries: PMap[str, object] = field(default_factory=pmap)
    format: str = FORMAT
    version: int = VERSION


def manifest_text(manifest: Manifest) -> bytes:
    """The manifest as indented, key-sorted JSON text."""
    encoded = msgspec.json.encode(to_json(manifest), order="sorted")
    return msgspec.json.format(encoded, indent=2)


def foreign(data: Any) -> str | None:
    """Why ``data`` is not a manifest of this format and version (``None``: it is).

    >>> foreign({"format": FORMAT, "version": 1}) is None
    True
    >>> foreign([])
    'format None, version None'
    """
    found = data if isinstance(data, dict) else {}
    if found.get("format") == FORMAT and found.get("version") == VERSION:
        return None
    return f"format {found.get('format')!r}, version {found.get('version')!r}"


def read_manifest(data: Any) -> Manifest:
    """A :class:`Manifest` from decoded JSON; ``ValueError`` naming the bad path."""
    return from_json(data, Manifest, MANIFEST)
