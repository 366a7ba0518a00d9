"""What a module computes, as a digest: the code it runs and every value that code reads.

A cache key built from ``repr(module)`` and the classes' source misses changes that alter
what ``forward`` computes without touching either: a plain attribute (``self.scale``), a
config object (a Hugging Face config's activation or epsilon), a module-level helper
function or constant, a hook, a library function monkeypatched by the user. This walk
sees them.

Rules:
- every submodule (by its path in the tree) contributes its class and its attributes:
  everything in its ``__dict__`` except the registered parameters, buffers and submodules
  (the weights digest and the walk itself cover those) and the ``training`` flag (a tune
  always runs the module in eval mode, and puts the user's module there), so plain
  attributes, configs and hooks count;
- a class contributes its qualified name and, for every class in its MRO, the code of
  each function and the value of each plain attribute it defines (a method patched onto
  a library class is seen: its code is hashed as any other);
- a function contributes its qualified name, its bytecode, constants and names (not its
  line numbers: moving code or editing a comment keeps the digest), its defaults and
  closure values, and the value of every global its code names, followed through
  modules (``F.gelu`` names ``F`` and ``gelu``: the walk looks ``gelu`` up on ``F``);
  user code is followed into the functions it calls, library code (installed packages
  and the standard library) is named, not followed, and its package's version counts;
- values: numbers, strings, bytes, enums, dtypes, devices as their ``repr``; tensors and
  arrays by dtype, shape and bytes; containers element by element; any other object by
  its type and its ``__dict__`` (``__slots__`` included; a record of its own process-bound
  ``hash()``, :data:`_VOLATILE_STATE`, left out), or its ``repr`` when that is not an
  address; identity never counts (a value shared by two owners hashes as two
  equal copies), and a cycle ends where it closes;
- the walk is bounded (:data:`MAX_NODES`); a model past the bound raises ``ValueError``,
  which the cache reads as "cannot key this module" and builds uncached.

>>> import torch
>>> class Scaled(torch.nn.Module):
...     def __init__(self, scale: float) -> None:
...         super().__init__()
...         self.scale = scale
...     def forward(self, x):
...         return x * self.scale
>>> behaviour_digest(Scaled(1.0)) == behaviour_digest(Scaled(1.0))
True
>>> behaviour_digest(Scaled(1.0)) == behaviour_digest(Scaled(3.0))
False

Longer than 260 lines: one walk over what a module computes; its cases share the walker's
state.
"""

from __future__ import annotations

import enum
import functools
import hashlib
import types
from typing import Any, Final

import torch

from aitune_fp.effects.cache.code_facts import (
    all_names,
    attribute_or_none,
    cell_full,
    class_file,
    is_library_file,
    object_state,
    package_version,
    unwrap_member,
    user_function,
)

MAX_NODES: Final = 200_000
_SKIPPED_ATTRIBUTES: Final = frozenset({"_parameters", "_buffers", "_modules", "training"})
_VOLATILE_STATE: Final = frozenset({"_original_object_hash"})
"""An object's own record of a hash that differs between processes (Hugging Face's
``GenerationConfig`` keeps the ``hash()`` it was created with)."""
_SKIPPED_CLASS_ATTRIBUTES: Final = frozenset(
    {
        "__dict__",
        "__weakref__",
        "__doc__",
        "__module__",
        "__qualname__",
        "__annotations__",
        "__slots__",
        "__firstlineno__",
        "__static_attributes__",
        "_abc_impl",
    }
)
_PLAIN: Final = (
    type(None),
    bool,
    int,
    float,
    complex,
    str,
    bytes,
    torch.dtype,
    torch.device,
    torch.Size,
    enum.Enum,
    range,
    slice,
    type(Ellipsis),
)


class _Walk:
    """One digest: a bounded walk over values feeding a stack of sha256 hashers.

    Every value that is not plain is hashed once into a digest of its own content (a memo
    by id) and that digest is fed wherever the value appears: a value shared by two owners
    hashes as two equal copies would (identity never shows in the digest) and costs one
    walk; a value met again on its own path is a cycle, fed as its type.
    """

    def __init__(self) -> None:
        self.stack = [hashlib.sha256()]
        self.memo: dict[int, str] = {}
        self.path: set[int] = set()
        self.keep: list[Any] = []  # keeps walked objects alive, so their ids stay unique
        self.nodes = 0

    @property
    def h(self) -> Any:
        return self.stack[0]

    def feed(self, text: str) -> None:
        self.stack[-1].update(text.encode("utf-8", "backslashreplace") + b"\x00")

    def value(self, v: Any) -> None:
        """Feed one value (see the module rules)."""
        if isinstance(v, _PLAIN):
            self.feed(f"{type(v).__qualname__}:{v!r}")
            return
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise ValueError(f"the module's state is too large to fingerprint (> {MAX_NODES})")
        key = id(v)
        if key in self.memo:
            self.feed(self.memo[key])
            return
        if key in self.path:
            self.feed(f"cycle:{type(v).__qualname__}")
            return
        self.path.add(key)
        self.keep.append(v)
        self.stack.append(hashlib.sha256())
        try:
            self._dispatch(v)
        finally:
            self.path.discard(key)
            self.memo[key] = self.stack.pop().hexdigest()
            self.feed(self.memo[key])

    def _dispatch(self, v: Any) -> None:
        if isinstance(v, torch.Tensor):
            self.tensor(v)
        elif isinstance(v, tuple | list | set | frozenset):
            self.sequence(v)
        elif isinstance(v, dict) or type(v).__name__ == "mappingproxy":
            self.mapping(v)
        elif isinstance(v, types.FunctionType | types.MethodType | types.BuiltinFunctionType):
            self.function(v)
        elif isinstance(v, type):
            self.cls(v)
        elif isinstance(v, types.ModuleType):
            self.feed(f"module:{v.__name__}")
        elif isinstance(v, functools.partial):
            self.feed("partial")
            self.value((v.func, v.args, v.keywords))
        else:
            self.other(v)

    def tensor(self, t: torch.Tensor) -> None:
        t = t.detach()
        self.feed(f"tensor|{t.dtype}|{tuple(t.shape)}")
        flat = t.to("cpu").contiguous().reshape(-1)
        if flat.numel() and not t.is_quantized and t.layout == torch.strided:
            self.h.update(flat.view(torch.uint8).numpy().tobytes())

    def sequence(self, items: Any) -> None:
        self.feed(f"{type(items).__qualname__}[{len(items)}")
        if isinstance(items, set | frozenset):
            for text in sorted(_sub_digest(x) for x in items):
                self.feed(text)
        else:
            for x in items:
                self.value(x)
        self.feed("]")

    def mapping(self, d: Any) -> None:
        self.feed(f"{type(d).__qualname__}{{{len(d)}")
        for key in sorted(d, key=repr):
            self.feed(repr(key))
            self.value(d[key])
        self.feed("}")

    def other(self, v: Any) -> None:
        kind = type(v)
        self.feed(f"object:{kind.__qualname__}")
        if hasattr(v, "tobytes") and hasattr(v, "dtype") and hasattr(v, "shape"):
            self.feed(f"array|{v.dtype}|{v.shape}")
            self.h.update(v.tobytes())
            return
        state = object_state(v)
        if state is not None:
            self.mapping({k: x for k, x in state.items() if k not in _VOLATILE_STATE})
        else:
            text = repr(v)
            self.feed("" if " at 0x" in text else text)
        if not is_library_file(class_file(kind)):
            self.cls(kind)

    def function(self, fn: Any) -> None:
        if isinstance(fn, types.MethodType):
            self.function(fn.__func__)
            return
        qualname = getattr(fn, "__qualname__", repr(fn))
        code = getattr(fn, "__code__", None)
        if code is None or is_library_file(code.co_filename):
            module = getattr(fn, "__module__", None)
            self.feed(f"fn:{module}.{qualname}|{package_version(module)}")
            return
        self.feed(f"fn:{qualname}")  # user code: its import name is left out
        self.value((fn.__defaults__, fn.__kwdefaults__))
        self.value(tuple(c.cell_contents for c in fn.__closure__ or () if cell_full(c)))
        self.code(code, fn.__globals__)

    def code(self, co: types.CodeType, globals_: dict[str, Any]) -> None:
        self.feed(f"code:{co.co_name}|{co.co_argcount}|{co.co_flags}")
        self.h.update(co.co_code)
        self.feed("|".join(co.co_names))
        for const in co.co_consts:
            if isinstance(const, types.CodeType):
                self.code(const, globals_)
            else:
                self.value(const)
        self.globals_named(co, globals_)

    def globals_named(self, co: types.CodeType, globals_: dict[str, Any]) -> None:
        names = all_names(co)
        modules = []
        for name in sorted(names):
            if name in globals_:
                found = globals_[name]
                self.feed(f"global:{name}")
                self.value(found)
                if isinstance(found, types.ModuleType):
                    modules.append(found)
        for module in modules:  # attributes the code may read through a module: F.gelu
            for name in sorted(names):
                found = attribute_or_none(module, name)
                if found is not None and not isinstance(found, types.ModuleType):
                    self.feed(f"attr:{module.__name__}.{name}")
                    self.value(found)

    def cls(self, kind: type) -> None:
        self.feed(f"class:{kind.__qualname__}")
        for klass in kind.__mro__:
            if klass is object or klass is torch.nn.Module:
                continue
            library = is_library_file(class_file(klass))
            version = package_version(klass.__module__) if library else ""
            self.feed(f"base:{klass.__qualname__}|{version}")
            for attr in sorted(vars(klass)):
                if attr in _SKIPPED_CLASS_ATTRIBUTES:
                    continue
                member = unwrap_member(vars(klass)[attr])
                if library and not user_function(member):
                    continue  # library code is named by its version, not followed
                self.feed(f"member:{attr}")
                self.value(member)

    def module_attributes(self, path: str, module: torch.nn.Module) -> None:
        """Feed one registered submodule: its path, class and plain attributes."""
        self.feed(f"submodule:{path}")
        self.cls(type(module))
        state = {
            k: tuple(v.values()) if "hook" in k and isinstance(v, dict) else v
            for k, v in vars(module).items()
            if k not in _SKIPPED_ATTRIBUTES
        }  # hooks are keyed by a process-wide counter: their order and functions count
        self.mapping(state)


def _sub_digest(value: Any) -> str:
    walk = _Walk()
    walk.value(value)
    return str(walk.h.hexdigest())


def behaviour_digest(module: torch.nn.Module) -> str:
    """sha256 of what ``module`` computes besides its weights (see the module rules)."""
    walk = _Walk()
    for path, sub in module.named_modules(remove_duplicate=False):
        walk.module_attributes(path, sub)
    return str(walk.h.hexdigest())
