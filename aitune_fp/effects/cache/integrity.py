"""Content hashes of files, and the check that files still match them.

Rules: a file is recorded by its size and sha256; a folder of files verifies when every
recorded file is a plain file directly in the folder with that size and hash. The first
problem is described in one line (missing, truncated, resized, modified, unsafe name);
nothing is trusted on its name alone.

A *sealed* folder (a saved module, a cache entry) is stricter (:func:`check_sealed`):
every entry of the folder except its index file is recorded, is a regular file directly
inside it (no absolute path, no ``..``, no sub-folder, no symbolic link, in or out) and
matches its record. :func:`private_copy` copies a sealed folder's files into a folder of
our own and verifies the *copies*, so what a runtime opens afterwards is exactly what was
checked, even if someone rewrites the original in between.
"""

from __future__ import annotations

import hashlib
import os
import stat
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
    """The sha256 of a file's content, read in 1 MiB chunks.

    >>> import hashlib, tempfile
    >>> path = Path(tempfile.mkdtemp()) / "a.bin"
    >>> _ = path.write_bytes(b"abc")
    >>> sha256_file(path) == hashlib.sha256(b"abc").hexdigest()
    True
    """
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


def digest(path: Path) -> FileDigest:
    """The size and sha256 of ``path``.

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "a.bin"
    >>> _ = path.write_bytes(b"abc")
    >>> digest(path).size, digest(path) == digest(path)
    (3, True)
    """
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


def check_sealed(folder: Path, files: Mapping[str, FileDigest], index: str) -> str | None:
    """``None`` when ``folder`` holds exactly ``index`` plus the recorded ``files``, each a
    regular file (not a link) with its recorded size and hash; else the first problem.

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp()); _ = (d / "a.bin").write_bytes(b"abc")
    >>> _ = (d / "index.json").write_text("{}")
    >>> rec = {"a.bin": digest(d / "a.bin")}
    >>> check_sealed(d, rec, "index.json") is None
    True
    >>> _ = (d / "a.bin.data").write_bytes(b"x")
    >>> check_sealed(d, rec, "index.json")
    'a.bin.data is in the folder but not listed in its files: refusing unlisted files'
    """
    for name in sorted(files):
        if not safe_name(name):
            return f"{name!r} is not a plain file name inside the folder"
        try:
            mode = os.lstat(folder / name).st_mode
        except FileNotFoundError:
            return f"{name} is missing"
        except OSError as error:
            return f"{name} cannot be read: {error.strerror or error}"
        if stat.S_ISLNK(mode):
            return f"{name} is a symbolic link: only regular files inside the folder are loaded"
        if not stat.S_ISREG(mode):
            return f"{name} is not a regular file"
    try:
        present = sorted(os.listdir(folder))
    except OSError as error:
        return f"{folder} cannot be listed: {error.strerror or error}"
    for name in present:
        if name != index and name not in files:
            return f"{name} is in the folder but not listed in its files: refusing unlisted files"
    return verify(folder, files)


def private_copy(folder: Path, files: Mapping[str, FileDigest], into: Path) -> str | None:
    """Copy the recorded ``files`` of ``folder`` into ``into`` and verify the copies;
    ``None`` when they match, else the first problem (the copies are then untrusted)."""
    into.mkdir(parents=True, exist_ok=True)
    for name in sorted(files):
        if not safe_name(name):
            return f"{name!r} is not a plain file name inside the folder"
        try:
            fd = os.open(folder / name, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError as error:
            return f"{name} cannot be opened: {error.strerror or error}"
        with os.fdopen(fd, "rb") as src, (into / name).open("wb") as out:
            while chunk := src.read(CHUNK):
                out.write(chunk)
    return verify(into, files)
