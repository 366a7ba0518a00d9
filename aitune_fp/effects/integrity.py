"""Content hashes of files, and the check that files still match them.

Rules: a file is recorded by its size and sha256; a folder of files verifies when every
recorded file is a plain file directly in the folder with that size and hash. The first
problem is described in one line (missing, truncated, resized, modified, unsafe name);
nothing is trusted on its name alone.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

CHUNK: Final = 1 << 20


@dataclass(frozen=True, slots=True)
class FileDigest:
    """A file's size in bytes and its sha256 (hex)."""

    size: int
    sha256: str


def sha256_file(path: Path) -> str:
    """The sha256 of a file's content, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


def digest(path: Path) -> FileDigest:
    """The size and sha256 of ``path``."""
    return FileDigest(path.stat().st_size, sha256_file(path))


def safe_name(name: str) -> bool:
    """Whether ``name`` is a plain file name (no folder part, not ``.``/``..``).

    >>> safe_name("model.onnx"), safe_name("../x"), safe_name("a/b")
    (True, False, False)
    """
    return bool(name) and name not in (".", "..") and "/" not in name and "\\" not in name


def verify(folder: Path, files: Mapping[str, FileDigest]) -> str | None:
    """``None`` when every recorded file matches, else the first problem in one line.

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp()); _ = (d / "a.bin").write_bytes(b"abc")
    >>> rec = {"a.bin": digest(d / "a.bin")}
    >>> verify(d, rec) is None
    True
    >>> _ = (d / "a.bin").write_bytes(b"ab")
    >>> verify(d, rec)
    'a.bin is truncated: 2 bytes, expected 3'
    """
    for name in sorted(files):
        expected = files[name]
        if not safe_name(name):
            return f"{name!r} is not a plain file name"
        path = folder / name
        if not path.is_file():
            return f"{name} is missing"
        size = path.stat().st_size
        if size < expected.size:
            return f"{name} is truncated: {size} bytes, expected {expected.size}"
        if size != expected.size:
            return f"{name} has {size} bytes, expected {expected.size}"
        if sha256_file(path) != expected.sha256:
            return f"{name} does not match its recorded sha256: it was modified or corrupted"
    return None
