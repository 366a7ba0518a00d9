"""Checking a fleet plan's values: :class:`PlanError` and the :class:`Checker` that raises it.

Rules: every problem names the line of the field it is about (``tomllib`` keeps no
positions, so :func:`~aitune_fp.core.fleet.toml_lines.field_line` finds it in the text)
and the field's dotted name (``models[1].factory``); a checker only reads, it keeps no
state beyond the text and the backend names it knows.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from aitune_fp.core.fleet.toml_lines import field_line, field_name


class PlanError(ValueError):
    """A plan that cannot run: the line, the field and what is wrong."""

    def __init__(self, line: int, field: str, problem: str) -> None:
        super().__init__(f"line {line}: {field}: {problem}")
        self.line = line
        self.field = field
        self.problem = problem


class Checker:
    """Raises :class:`PlanError` for a path of the document it reads."""

    def __init__(self, text: str, known_backends: Collection[str] | None) -> None:
        self.text = text
        self.known = known_backends

    def fail(self, path: Sequence[str | int], problem: str) -> PlanError:
        return PlanError(field_line(self.text, path), field_name(path), problem)

    def keys(self, table: Mapping[str, Any], allowed: Sequence[str], path: tuple[Any, ...]) -> None:
        for key in table:
            if key not in allowed:
                raise self.fail((*path, key), f"unknown key; use one of {', '.join(allowed)}")

    def string(self, value: Any, path: tuple[Any, ...]) -> str:
        if not isinstance(value, str) or not value.strip():
            raise self.fail(path, f"expected a non-empty string, got {value!r}")
        return value.strip()

    def strings(self, value: Any, path: tuple[Any, ...]) -> tuple[str, ...]:
        if not isinstance(value, list):
            raise self.fail(path, f"expected a list of strings, got {value!r}")
        return tuple(self.string(v, (*path, i)) for i, v in enumerate(value))

    def positive_int(self, value: Any, path: tuple[Any, ...], *, least: int = 1) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise self.fail(path, f"expected an integer >= {least}, got {value!r}")
        return value

    def backends(self, value: Any, path: tuple[Any, ...]) -> tuple[str, ...]:
        names = self.strings(value, path)
        if not names:
            raise self.fail(path, "expected at least one backend name")
        for i, name in enumerate(names):
            outside = ":" in name  # a user's ``module:Class``, resolved when a job runs
            if self.known is not None and not outside and name not in self.known:
                raise self.fail(
                    (*path, i), f"unknown backend {name!r}; known: {', '.join(sorted(self.known))}"
                )
        return names
