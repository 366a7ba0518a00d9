"""The lines and timed parts a build keeps for its ``build.log`` (see :mod:`._build_guard`)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator


class BuildLog:
    """Lines a build wants kept in ``build.log`` (a write-only sink for the build step)."""

    __slots__ = ("_lines", "seconds")

    def __init__(self) -> None:
        self._lines: list[str] = []
        self.seconds: dict[str, float] = {}
        """Wall seconds of each part timed with :meth:`timed` (summed when repeated)."""

    @contextlib.contextmanager
    def timed(self, part: str) -> Iterator[None]:
        """Time the block as build part ``part`` (``export``, ``compile``), failed or not.

        >>> log = BuildLog()
        >>> with log.timed("export"):
        ...     pass
        >>> list(log.seconds)
        ['export']
        """
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[part] = self.seconds.get(part, 0.0) + time.perf_counter() - start

    def write(self, line: str) -> None:
        """Keep ``line`` (without its trailing newline)."""
        self._lines.append(line.rstrip("\n"))

    def text(self) -> str:
        """Everything written so far, one entry per line."""
        return "\n".join(self._lines)
