"""Atomic file writes: a file is either its old content or its whole new content, never half.

Rules:
- a write goes to a temporary file in the same folder (same file system, so the rename is
  atomic), is flushed and ``fsync``-ed, then renamed over the target with ``os.replace``;
- when anything fails (a full disk, a signal, a crash of the writer) the temporary file is
  removed and the target keeps its previous content; the error propagates;
- a folder is published the same way: built under a temporary name next to it, then
  renamed into place (:func:`publish_dir`).

>>> import tempfile
>>> folder = Path(tempfile.mkdtemp())
>>> _ = write_text(folder / "run.json", '{"ok": 1}')
>>> (folder / "run.json").read_text(), sorted(p.name for p in folder.iterdir())
('{"ok": 1}', ['run.json'])
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path


def write_bytes(path: Path, data: bytes) -> Path:
    """Replace ``path`` with ``data`` atomically (parent folders are created); returns it.

    >>> root = Path(tempfile.mkdtemp())
    >>> write_bytes(root / "new" / "a.txt", b"one").read_bytes()
    b'one'
    >>> write_bytes(root / "new" / "a.txt", b"two").read_bytes(), sorted(os.listdir(root / "new"))
    (b'two', ['a.txt'])
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def write_text(path: Path, text: str) -> Path:
    """Replace ``path`` with ``text`` (UTF-8) atomically; returns it."""
    return write_bytes(path, text.encode("utf-8"))


def copy_file(source: Path, path: Path) -> Path:
    """Copy ``source`` to ``path`` atomically (content and permission bits); returns it.

    >>> root = Path(tempfile.mkdtemp())
    >>> source = write_bytes(root / "a.sh", b"echo")
    >>> source.chmod(0o755)
    >>> copy = copy_file(source, root / "out" / "b.sh")
    >>> copy.read_bytes(), oct(copy.stat().st_mode & 0o777)
    (b'echo', '0o755')
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out, source.open("rb") as src:
            shutil.copyfileobj(src, out, 1 << 20)
            out.flush()
            os.fsync(out.fileno())
        shutil.copymode(source, tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


@contextlib.contextmanager
def staging_dir(target: Path) -> Iterator[Path]:
    """A fresh temporary folder next to ``target``, removed when the block raises.

    Publish it with :func:`publish_dir` inside the block.

    >>> root = Path(tempfile.mkdtemp())
    >>> try:
    ...     with staging_dir(root / "entry") as staging:
    ...         _ = (staging / "half").write_text("written")
    ...         raise OSError("disk full")
    ... except OSError:
    ...     pass
    >>> os.listdir(root)  # the half-written folder is gone
    []
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.staging-", dir=target.parent))
    try:
        yield staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def publish_dir(staging: Path, target: Path) -> Path:
    """Move the finished ``staging`` folder to ``target``, replacing an earlier one.

    The earlier folder is first renamed aside (one rename), so a reader sees the old or
    the new folder; the old one is then deleted.

    >>> root = Path(tempfile.mkdtemp())
    >>> for text in ("old", "new"):
    ...     with staging_dir(root / "entry") as staging:
    ...         _ = (staging / "file").write_text(text)
    ...         _ = publish_dir(staging, root / "entry")
    >>> (root / "entry" / "file").read_text(), os.listdir(root)
    ('new', ['entry'])
    """
    old: Path | None = None
    if target.exists() or target.is_symlink():
        old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
        os.replace(target, old / target.name)
    os.replace(staging, target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return target
