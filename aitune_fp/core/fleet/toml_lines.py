"""Where a field of a TOML document is written: its line number, found in the text.

``tomllib`` reports line numbers for syntax errors only; a value that parses but is wrong
still has to be shown at its line. The rules here read the text line by line:

- ``[[name]]`` opens the next element of the array of tables ``name``; ``[name]`` opens a
  table; ``key = …`` at the start of a line defines ``key`` in the current table;
- a field path is a tuple like ``("max_batch_size",)``, ``("models", 1)`` or
  ``("models", 1, "factory")`` (elements counted from 0);
- the line of a path is the line of its deepest part that is written in the text: the key
  inside the element, else the element's header, else the top-level key (an inline array
  of tables ``models = [...]`` points at ``models``), else line 1.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

_ARRAY_HEADER: Final = re.compile(r"^\s*\[\[\s*([A-Za-z0-9_.-]+)\s*\]\]")
_TABLE_HEADER: Final = re.compile(r"^\s*\[\s*([A-Za-z0-9_.-]+)\s*\]")
_KEY: Final = re.compile(r"""^\s*(?:"([^"]*)"|'([^']*)'|([A-Za-z0-9_-]+))\s*=""")

Path = tuple[str | int, ...]


def _scan(text: str) -> dict[Path, int]:
    """Every header and key of ``text`` mapped to its (first) line number, 1-based."""
    found: dict[Path, int] = {}
    counts: dict[str, int] = {}
    table: Path = ()
    for number, line in enumerate(text.splitlines(), start=1):
        if match := _ARRAY_HEADER.match(line):
            name = match.group(1)
            index = counts.get(name, 0)
            counts[name] = index + 1
            table = (name, index)
            found.setdefault((name,), number)
            found.setdefault(table, number)
        elif match := _TABLE_HEADER.match(line):
            table = (match.group(1),)
            found.setdefault(table, number)
        elif match := _KEY.match(line):
            key = next(g for g in match.groups() if g is not None)
            found.setdefault((*table, key), number)
    return found


def field_line(text: str, path: Sequence[str | int]) -> int:
    """The line where ``path`` is written (or the nearest enclosing part of it).

    >>> doc = 'strategies = ["min-latency"]\\n[[models]]\\nname = "mlp"\\n'
    >>> doc += '[[models]]\\nname = "x"\\n'
    >>> field_line(doc, ("models", 1, "name")), field_line(doc, ("models", 1, "factory"))
    (5, 4)
    >>> field_line(doc, ("strategies", 0)), field_line(doc, ("targets",))
    (1, 1)
    """
    found = _scan(text)
    parts = tuple(path)
    for end in range(len(parts), 0, -1):
        if parts[:end] in found:
            return found[parts[:end]]
    return 1


def field_name(path: Sequence[str | int]) -> str:
    """A path as users read it: ``models[1].factory``.

    >>> field_name(("models", 1, "factory")), field_name(("strategies", 0))
    ('models[1].factory', 'strategies[0]')
    """
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text
