"""The code-shape measures of issue 22 §5, read from source with :mod:`ast` (nothing is imported).

Definitions (the architecture tests and ``scripts/code_shape.py`` use exactly these):

* **file length**: the number of lines of a ``.py`` file (``str.splitlines``).
* **body length** of a ``def`` (module-level, method or nested; ``async`` too): the lines from
  the first statement after the docstring to the last line of the last statement, both
  included; a body that is only a docstring has length 0. A nested ``def`` counts inside its
  parent's body and again on its own.
* **p90**: the nearest-rank 90th percentile of the body lengths of a layer (the smallest
  length that at least 90 % of the bodies do not exceed); 0 for no functions.
* **public function**: a module-level ``def`` whose name does not start with ``_``; methods do
  not count. It **has a doctest** when its own docstring holds a ``>>>`` line, or when a
  ``>>>`` line of its module's docstring calls it by name (``name(``).
* **unsafe module**: a module that imports ``returns.unsafe`` (in any spelling) or calls a
  function named ``unsafe_perform_io``.
* **parameters** of a ``def``: its positional-only, ordinary and keyword-only parameters,
  plus one for ``*args`` and one for ``**kwargs``; a method's first parameter (``self``,
  ``cls``) does not count. A **wide** function has more than 8.
* **Any record**: a class-level annotated field whose annotation names ``Any``, or a
  module-level alias whose value is ``Any`` (``X = Any``, ``X: TypeAlias = Any``).

>>> body_lengths("def f():\\n    '''Doc.'''\\n    a = 1\\n    return a\\n")
[2]
>>> p90([1] * 9 + [50])
1
>>> p90([1] * 8 + [50, 50])
50

Longer than 260 lines: each measure is small, and the house reads them all from one module.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Iterable, Iterator
from pathlib import Path

LAYERS = ("core", "effects", "shell", "cli")
"""The layers whose shape is measured (subpackages of ``aitune_fp``)."""


def _defs(tree: ast.AST) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    """Every function definition anywhere in ``tree``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


def _has_docstring(body: list[ast.stmt]) -> bool:
    """Whether a body opens with a string literal statement."""
    first = body[0] if body else None
    return (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    )


def body_length(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """The lines of ``node``'s body after its docstring (0 when only a docstring is left)."""
    body = node.body[1:] if _has_docstring(node.body) else node.body
    if not body:
        return 0
    return (body[-1].end_lineno or body[-1].lineno) - body[0].lineno + 1


def body_lengths(source: str) -> list[int]:
    """The body length of every function in ``source``, in walk order."""
    return [body_length(node) for node in _defs(ast.parse(source))]


def p90(lengths: Iterable[int]) -> int:
    """Nearest-rank 90th percentile of ``lengths``; 0 for none.

    >>> p90([]), p90([3]), p90(range(1, 11)), p90(range(1, 12))
    (0, 3, 9, 10)
    """
    ordered = sorted(lengths)
    if not ordered:
        return 0
    return ordered[math.ceil(0.9 * len(ordered)) - 1]


def doctest_coverage(source: str) -> tuple[int, int]:
    """``(public functions with a doctest, public functions)`` of one module's source.

    >>> src = "'''\\n>>> g(1)\\n'''\\ndef f():\\n    '>>> f()'\\n"
    >>> src += "def g(): pass\\ndef h(): pass\\ndef _i(): pass\\n"
    >>> doctest_coverage(src)
    (2, 3)
    """
    tree = ast.parse(source)
    module_doc = ast.get_docstring(tree) or ""
    example_lines = [ln for ln in module_doc.splitlines() if ln.strip().startswith((">>>", "..."))]
    public = [
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and not node.name.startswith("_")
    ]
    covered = [
        node
        for node in public
        if ">>>" in (ast.get_docstring(node) or "")
        or any(f"{node.name}(" in line for line in example_lines)
    ]
    return len(covered), len(public)


def uses_unsafe(source: str) -> bool:
    """Whether ``source`` imports ``returns.unsafe`` or calls ``unsafe_perform_io``.

    >>> uses_unsafe("from returns import unsafe"), uses_unsafe("x.unsafe_perform_io(y)")
    (True, True)
    >>> uses_unsafe("from returns.io import IOResult")
    False
    """
    return any(_is_unsafe(node) for node in ast.walk(ast.parse(source)))


def _is_unsafe(node: ast.AST) -> bool:
    """Whether ``node`` imports ``returns.unsafe`` or calls ``unsafe_perform_io``."""
    if isinstance(node, ast.Import):
        return any(a.name.startswith("returns.unsafe") for a in node.names)
    if isinstance(node, ast.ImportFrom):
        module = node.module or ""
        named = module == "returns" and any(a.name == "unsafe" for a in node.names)
        return module.startswith("returns.unsafe") or named
    if isinstance(node, ast.Call):
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        return name == "unsafe_perform_io"
    return False


def _names_any(node: ast.expr | None) -> bool:
    """Whether an annotation or value mentions ``Any`` (``Any`` or ``typing.Any``)."""
    return node is not None and any(
        (isinstance(n, ast.Name) and n.id == "Any")
        or (isinstance(n, ast.Attribute) and n.attr == "Any")
        for n in ast.walk(node)
    )


def _is_any(node: ast.expr | None) -> bool:
    """Whether an expression is exactly ``Any`` or ``typing.Any``."""
    return (isinstance(node, ast.Name) and node.id == "Any") or (
        isinstance(node, ast.Attribute) and node.attr == "Any"
    )


def any_records(source: str) -> list[str]:
    """The ``Any``-typed record fields and ``Any`` aliases of ``source``, as ``name`` strings.

    >>> src = "from typing import Any\\nSetup = Any\\n"
    >>> any_records(src + "class R:\\n    x: int\\n    y: dict[str, Any]\\n")
    ['Setup', 'R.y']
    """
    tree = ast.parse(source)
    found: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and _is_any(node.value):
            found += [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif (
            isinstance(node, ast.AnnAssign)
            and _is_any(node.value)
            and isinstance(node.target, ast.Name)
        ):
            found.append(node.target.id)
        elif isinstance(node, ast.ClassDef):
            found += [
                f"{node.name}.{field.target.id}"
                for field in node.body
                if isinstance(field, ast.AnnAssign)
                and isinstance(field.target, ast.Name)
                and _names_any(field.annotation)
            ]
    return found


def parameter_count(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """``node``'s parameters (see the module's definitions; ``self`` and ``cls`` left out).

    >>> parameter_count(ast.parse("def f(a, /, b, *c, d, **e): pass").body[0])
    5
    >>> parameter_count(ast.parse("def m(self, a=1): pass").body[0])
    1
    """
    a = node.args
    names = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    if names and names[0] in ("self", "cls"):
        names = names[1:]
    return len(names) + (a.vararg is not None) + (a.kwarg is not None)


def _qualified_defs(
    node: ast.AST, prefix: str = ""
) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function under ``node`` with its dotted name (``Class.method``, ``f.inner``)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            name = f"{prefix}{child.name}"
            if not isinstance(child, ast.ClassDef):
                yield name, child
            yield from _qualified_defs(child, f"{name}.")
        else:
            yield from _qualified_defs(child, prefix)


def wide_functions(source: str, limit: int = 8) -> list[str]:
    """``"name: n parameters"`` for each function of ``source`` with more than ``limit``.

    >>> wide_functions("def f(a, b, c): pass\\nclass C:\\n    def m(self, a, b, *, c): pass", 2)
    ['f: 3 parameters', 'C.m: 3 parameters']
    """
    return [
        f"{name}: {n} parameters"
        for name, node in _qualified_defs(ast.parse(source))
        if (n := parameter_count(node)) > limit
    ]


def wide_functions_under(root: Path, limit: int = 8) -> list[str]:
    """``"path: name: n parameters"`` for each function under ``root`` wider than ``limit``."""
    return [
        f"{path}: {line}"
        for path, text in sources(root).items()
        for line in wide_functions(text, limit)
    ]


def sources(root: Path) -> dict[Path, str]:
    """The text of every ``.py`` file under ``root``, by path, in sorted order."""
    return {path: path.read_text(encoding="utf-8") for path in sorted(root.rglob("*.py"))}


def long_files(root: Path, limit: int = 300) -> list[str]:
    """``"path: n lines"`` for each ``.py`` file under ``root`` with more than ``limit`` lines."""
    return [
        f"{path}: {n} lines"
        for path, text in sources(root).items()
        if (n := len(text.splitlines())) > limit
    ]


def layer_p90(root: Path) -> int:
    """p90 of the body lengths of every function under ``root``."""
    return p90(n for text in sources(root).values() for n in body_lengths(text))


def doctest_share(root: Path) -> float:
    """The share (0..1) of public functions under ``root`` that have a doctest; 1 for none."""
    pairs = [doctest_coverage(text) for text in sources(root).values()]
    total = sum(t for _, t in pairs)
    return sum(c for c, _ in pairs) / total if total else 1.0


def unsafe_modules(root: Path) -> list[Path]:
    """The modules under ``root`` that import ``returns.unsafe`` or call ``unsafe_perform_io``."""
    return [path for path, text in sources(root).items() if uses_unsafe(text)]


def any_records_under(root: Path) -> list[str]:
    """``"path: name"`` for each ``Any`` record field or alias under ``root``."""
    return [f"{path}: {name}" for path, text in sources(root).items() for name in any_records(text)]
