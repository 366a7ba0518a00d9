"""Reading a save folder safely: the manifest (optionally pinned) and a verified private
copy of the files it lists (see :mod:`aitune_fp.shell.persist` for the rules)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import msgspec

from aitune_fp.effects.cache.artifacts import external_data
from aitune_fp.effects.cache.integrity import FileDigest, check_sealed, private_copy, safe_name
from aitune_fp.shell.manifest import FORMAT, MANIFEST, VERSION, Manifest, foreign, read_manifest

__all__ = ["FORMAT", "MANIFEST", "VERSION", "LoadError", "Manifest", "manifest_digest"]


class LoadError(ValueError):
    """A saved module that cannot be loaded (the message says which file and why)."""


def manifest_digest(path: str | Path) -> str:
    """``sha256:<hex>`` of the save folder's manifest: what ``load(expected_digest=)`` pins.

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / MANIFEST).write_bytes(b"{}")
    >>> manifest_digest(folder)
    'sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a'
    """
    return "sha256:" + hashlib.sha256((Path(path) / MANIFEST).read_bytes()).hexdigest()


def _check_pinned(folder: Path, raw: bytes, expected_digest: str) -> None:
    """Refuse a manifest whose digest is not ``expected_digest`` (``sha256:<hex>``)."""
    algorithm, _, expected = expected_digest.partition(":")
    actual = hashlib.sha256(raw).hexdigest()
    if algorithm != "sha256" or not expected:
        raise LoadError(f"expected_digest must look like sha256:<hex>, got {expected_digest!r}")
    if actual != expected.lower():
        raise LoadError(
            f"refusing to load {folder}: {MANIFEST} has sha256:{actual}, "
            f"not the expected {expected_digest}"
        )


def _read_manifest(folder: Path, expected_digest: str | None = None) -> Manifest:
    try:
        raw = (folder / MANIFEST).read_bytes()
    except FileNotFoundError:
        raise LoadError(f"{folder} is not an aitune_fp save: it has no {MANIFEST}") from None
    except OSError as error:
        raise LoadError(f"{folder / MANIFEST} cannot be read: {error}") from None
    if expected_digest is not None:
        _check_pinned(folder, raw, expected_digest)
    return _parsed(folder, raw)


def _parsed(folder: Path, raw: bytes) -> Manifest:
    """The manifest in ``raw``; not JSON, not this format and version, or a value of the
    wrong type is a ``LoadError``."""
    try:
        data = msgspec.json.decode(raw)
    except msgspec.DecodeError as error:
        raise LoadError(f"{folder / MANIFEST} cannot be read: {error}") from None
    why = foreign(data)
    if why is not None:
        raise LoadError(
            f"{folder / MANIFEST} is not an aitune_fp save of version {VERSION} ({why})"
        )
    try:
        return read_manifest(data)
    except ValueError as error:
        raise LoadError(f"{folder / MANIFEST}: {error}") from None


def _sealed_copy(folder: Path, doc: Manifest, into: Path) -> dict[str, FileDigest]:
    """Check ``folder`` is sealed, copy its files into ``into`` and verify the copies."""
    files, artifact = dict(doc.files), doc.artifact
    problem = check_sealed(folder, files, MANIFEST)
    listed = artifact is not None and safe_name(artifact) and artifact in files
    if problem is None and doc.mode == "artifact" and not listed:
        problem = f"its artifact {artifact!r} is not a file listed in {MANIFEST}"
    problem = problem or private_copy(folder, files, into)
    if problem is None and artifact is not None and doc.mode == "artifact":
        try:
            missing = [n for n in external_data(into / artifact) if n not in files]
        except ValueError as error:
            problem = str(error)
        else:
            problem = f"{missing[0]} (external data) is not listed" if missing else None
    if problem is not None:
        raise LoadError(f"refusing to load {folder}: {problem}")
    return files
