"""What the behaviour digest reads off code and objects: library or user code, versions,
the names a function's code reads, an object's own state.

Rules (of :mod:`aitune_fp.effects.cache.fingerprint`): code under the standard library's or the
installed packages' folders (or frozen) is a library's: named with its package's version,
never followed; any other function is the user's and is followed; a name a function reads
includes those read by the code objects nested in it; an object's state is its
``__dict__`` and its ``__slots__`` values.
"""

from __future__ import annotations

import functools
import importlib.metadata
import sys
import sysconfig
import types
from typing import Any


@functools.lru_cache(maxsize=1)
def library_dirs() -> tuple[str, ...]:
    """Folders whose code is a library's: the standard library and installed packages."""
    paths = sysconfig.get_paths()
    keys = ("stdlib", "platstdlib", "purelib", "platlib")
    return tuple(sorted({paths[k] for k in keys if k in paths}))


def is_library_file(filename: str) -> bool:
    """Whether code in ``filename`` is a library's (standard library, installed, frozen).

    >>> import json
    >>> is_library_file(json.__file__), is_library_file("<frozen posixpath>")
    (True, True)
    >>> is_library_file("/home/me/model.py")
    False
    """
    return filename.startswith((*library_dirs(), "<frozen"))


@functools.lru_cache(maxsize=512)
def package_version(module_name: str | None) -> str:
    """The top-level package of ``module_name`` with its installed version; a standard
    library module or ``builtins`` is its bare name (Python's version is keyed elsewhere).

    >>> package_version("json.decoder"), package_version("builtins"), package_version(None)
    ('json', 'builtins', '')
    >>> package_version("torch.nn.functional").startswith("torch==")
    True
    """
    root = (module_name or "").split(".")[0]
    if not root or root in sys.stdlib_module_names or root == "builtins":
        return root
    try:
        return f"{root}=={importlib.metadata.version(root)}"
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return f"{root}=={getattr(sys.modules.get(root), '__version__', '?')}"


def attribute_or_none(module: types.ModuleType, name: str) -> Any:
    """``module.name``, or ``None`` (a lazy module may raise anything on a missing name).

    >>> import types
    >>> class Lazy(types.ModuleType):
    ...     def __getattr__(self, name):
    ...         raise RuntimeError("cannot import " + name)
    >>> attribute_or_none(Lazy("lazy"), "gelu") is None
    True
    """
    try:
        return getattr(module, name, None)
    except Exception:
        return None


def cell_full(cell: Any) -> bool:
    """Whether a closure cell holds a value yet (an empty cell raises when read).

    >>> import types
    >>> cell_full(types.CellType(1)), cell_full(types.CellType())
    (True, False)
    """
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True


def all_names(co: types.CodeType) -> set[str]:
    """The global and attribute names ``co`` reads, nested code objects (lambdas,
    comprehensions, inner functions) included.

    >>> def f(x):
    ...     return lambda: helper(x).scale
    >>> sorted(all_names(f.__code__))
    ['helper', 'scale']
    """
    names = set(co.co_names)
    for const in co.co_consts:
        if isinstance(const, types.CodeType):
            names |= all_names(const)
    return names


def unwrap_member(member: Any) -> Any:
    """The function inside a ``staticmethod``, ``classmethod`` or ``property``
    (a property gives its getter and setter).

    >>> def f(): pass
    >>> unwrap_member(staticmethod(f)) is f, unwrap_member(property(f)) == (f, None)
    (True, True)
    """
    if isinstance(member, staticmethod | classmethod):
        return member.__func__
    if isinstance(member, property):
        return (member.fget, member.fset)
    return member


def user_function(member: Any) -> bool:
    """Whether ``member`` has code outside the libraries (the walk follows only those).

    >>> import json
    >>> user_function(json.dumps), user_function(len), user_function(lambda: 1)
    (False, False, True)
    """
    code = getattr(member, "__code__", None)
    return code is not None and not is_library_file(code.co_filename)


def class_file(kind: type) -> str:
    """The file that defines the module of ``kind`` (``"<unknown>"`` for none).

    >>> class_file(int)
    '<unknown>'
    """
    module = sys.modules.get(kind.__module__)
    return str(getattr(module, "__file__", None) or "<unknown>")


def object_state(v: Any) -> dict[str, Any] | None:
    """An object's own state: its ``__dict__`` and its set ``__slots__`` (``None``: none).

    >>> class Point:
    ...     __slots__ = ("x", "y")
    ...     def __init__(self): self.x = 1
    >>> object_state(Point()), object_state(object())
    ({'x': 1}, None)
    """
    state: dict[str, Any] = dict(getattr(v, "__dict__", {}) or {})
    for klass in type(v).__mro__:
        for slot in (
            getattr(klass, "__slots__", ())
            if isinstance(getattr(klass, "__slots__", ()), tuple | list)
            else ()
        ):
            if hasattr(v, slot) and slot not in ("__dict__", "__weakref__"):
                state[slot] = getattr(v, slot)
    return state or None
