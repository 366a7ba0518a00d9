"""Containers are data: a module's inputs and outputs as tensor leaves plus a plain structure.

Rules:
- a structure is whatever ``torch.utils._pytree`` flattens: tuples, lists, dicts, named
  tuples, Hugging Face ``ModelOutput`` (registered by transformers itself), and the classes
  :func:`register_known` registers — every transformers ``Cache`` subclass
  (``DynamicCache``, ``StaticCache``, …) with transformers' own export hooks, as soon as
  ``transformers.cache_utils`` is imported, and any dataclass met as a leaf;
- :func:`flatten` registers what it meets and returns the leaves and the ``TreeSpec``;
  :func:`describe` writes a spec as JSON text (pytree's own ``treespec_dumps``; a spec it
  cannot serialise, such as an unregistered named tuple, gets a plain description that
  still compares equal only for equal structures but cannot be rebuilt);
- :func:`to_stored` turns a structure into what ``torch.save`` keeps and
  ``torch.load(weights_only=True)`` reads back: ``{"leaves": [...], "structure": text}``,
  leaves being CPU tensors or plain scalars — nothing a loader must unpickle; any other
  leaf is a ``ValueError`` naming its type;
- :func:`rebuild` turns leaves and a description back into the user's type; a registered
  type named by the description whose module is not imported yet is imported only when its
  top-level package already is (a stored file brings no new package in).
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import sys
from typing import Any, Final

import torch
import torch.utils._pytree as pytree

from aitune_fp.effects.backends._treespec import child_spec

PLAIN: Final = (bool, int, float, str, type(None))


def _subclasses(cls: type) -> list[type]:
    found: list[type] = []
    sub: type
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found


def _register_hf(cls: type) -> None:
    """Register one transformers cache class with transformers' own pytree hooks."""
    try:
        from transformers.exporters.exporter_dynamo import register_pytree_node
    except ImportError:  # transformers 4.x: only DynamicCache has hooks
        from transformers.integrations.executorch import register_dynamic_cache_export_support

        register_dynamic_cache_export_support()  # type: ignore[no-untyped-call]
        return
    register_pytree_node(cls)


def register_known() -> int:
    """Register every transformers ``Cache`` subclass not yet a pytree node (when
    ``transformers.cache_utils`` is imported); how many were registered."""
    cache_utils = sys.modules.get("transformers.cache_utils")
    if cache_utils is None:
        return 0
    new = [c for c in _subclasses(cache_utils.Cache) if c not in pytree.SUPPORTED_NODES]
    for cls in new:
        _register_hf(cls)
    return sum(1 for c in new if c in pytree.SUPPORTED_NODES)


def _register_leaf_type(cls: type) -> bool:
    """Register ``cls`` (a leaf's type) as a pytree node when it is a dataclass."""
    if cls in pytree.SUPPORTED_NODES or not dataclasses.is_dataclass(cls):
        return False
    if not all(f.init for f in dataclasses.fields(cls)):
        return False
    pytree.register_dataclass(cls, serialized_type_name=f"{cls.__module__}.{cls.__qualname__}")
    return True


def flatten(tree: Any) -> tuple[list[Any], pytree.TreeSpec]:
    """The leaves and spec of ``tree``, registering the containers met on the way.

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Pair:
    ...     a: torch.Tensor
    ...     b: int
    >>> leaves, spec = flatten({"p": Pair(torch.zeros(1), 3)})
    >>> [type(x).__name__ for x in leaves], spec.num_leaves
    (['Tensor', 'int'], 2)
    """
    register_known()
    for _ in range(64):  # each round registers at least one new type, or ends
        leaves, spec = pytree.tree_flatten(tree)
        kinds = {type(x) for x in leaves if not isinstance(x, (torch.Tensor, *PLAIN))}
        registered = [_register_leaf_type(k) for k in kinds]  # every one, no short cut
        if not any(registered) and not register_known():
            return leaves, spec
    return leaves, spec


def register_spec(spec: pytree.TreeSpec) -> None:
    """Register every container type ``spec`` names that this process has not registered
    (a spec unpickled in a worker process names types only its parent registered)."""
    stack = [spec]
    while stack:
        node = stack.pop()
        if node.type is not None and node.type not in pytree.SUPPORTED_NODES:
            register_known()
            _register_leaf_type(node.type)
        stack.extend(child_spec(node, i) for i in range(node.num_children))


def labelled(tree: Any, root: str = "output") -> tuple[list[tuple[str, Any]], pytree.TreeSpec]:
    """Every leaf of ``tree`` labelled with its path, and the structure's spec.

    >>> labelled({"a": 1, "b": (2, 3)})[0]
    [("output['a']", 1), ("output['b'][0]", 2), ("output['b'][1]", 3)]
    """
    flatten(tree)
    with_paths, spec = pytree.tree_flatten_with_path(tree)
    return [(root + pytree.keystr(p), leaf) for p, leaf in with_paths], spec


def _type_name(cls: Any) -> str:
    return "leaf" if cls is None else f"{cls.__module__}.{cls.__qualname__}"


def _plain(spec: pytree.TreeSpec) -> dict[str, Any]:
    """A description of ``spec`` for types pytree cannot serialise (compares, not rebuilds)."""
    try:
        context = json.loads(json.dumps(spec.context))
    except TypeError:
        context = _type_name(spec.context) if isinstance(spec.context, type) else repr(spec.context)
    children = [_plain(child_spec(spec, i)) for i in range(spec.num_children)]
    return {"type": _type_name(spec.type), "context": context, "children": children}


def describe(spec: pytree.TreeSpec) -> str:
    """``spec`` as JSON text: pytree's serialisation, else a plain description.

    >>> describe(flatten((torch.zeros(1), {"k": 2}))[1])[:30]
    '[1, {"type": "builtins.tuple",'
    """
    try:
        return pytree.treespec_dumps(spec)
    except (NotImplementedError, TypeError, ValueError):
        return json.dumps({"described": _plain(spec)}, sort_keys=True)


def structure(tree: Any) -> str:
    """The description of ``tree``'s structure (:func:`describe` of its spec)."""
    return describe(flatten(tree)[1])


def _stored_leaf(index: int, leaf: Any) -> Any:
    if isinstance(leaf, torch.Tensor):
        return leaf.detach().to("cpu").clone()
    if isinstance(leaf, PLAIN):
        return leaf
    raise ValueError(f"leaf {index} is a {type(leaf).__name__}, neither a tensor nor plain data")


def to_stored(tree: Any) -> dict[str, Any]:
    """``tree`` as leaves (CPU tensors, plain scalars) and its description, for ``torch.save``.

    >>> stored = to_stored({"x": torch.ones(1), "n": None})
    >>> [type(v).__name__ for v in stored["leaves"]], type(stored["structure"]).__name__
    (['Tensor', 'NoneType'], 'str')
    """
    leaves, spec = flatten(tree)
    stored = [_stored_leaf(i, x) for i, x in enumerate(leaves)]
    return {"leaves": stored, "structure": describe(spec)}


def _import_named(text: str) -> None:
    """Import the modules of the serialised types named in ``text`` whose top-level package
    is already imported, and register what they define (transformers' caches, and a named
    dataclass defined at a module's top level)."""
    names = set()
    stack: list[Any] = [json.loads(text)]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("type"), str):
                names.add(node["type"])
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    for name in sorted(names - set(pytree.SERIALIZED_TYPE_TO_PYTHON_TYPE)):
        module = name.split(":")[0] if ":" in name else name.rpartition(".")[0]
        if module and module.split(".")[0] in sys.modules:
            try:
                found = importlib.import_module(module)
            except ImportError:
                continue
            cls = getattr(found, name[len(module) + 1 :], None)
            if isinstance(cls, type):  # a dataclass registers on sight, as flatten does
                _register_leaf_type(cls)
    register_known()


def read_spec(text: str) -> pytree.TreeSpec:
    """The spec a :func:`describe` text names; ``ValueError`` when it cannot be rebuilt."""
    if '"described"' in text[:16]:
        raise ValueError("the stored structure was described, not serialised: it cannot be rebuilt")
    try:
        return pytree.treespec_loads(text)
    except Exception:
        pass
    try:
        _import_named(text)
        return pytree.treespec_loads(text)
    except Exception as error:
        raise ValueError(f"the stored structure cannot be read: {error}") from None


def rebuild(leaves: list[Any], text: str) -> Any:
    """The user's structure from ``leaves`` and its description ``text``.

    >>> stored = to_stored({"x": torch.ones(1), "y": (2, 3)})
    >>> rebuild(stored["leaves"], stored["structure"])["y"]
    (2, 3)
    """
    return pytree.tree_unflatten(list(leaves), read_spec(text))
