"""Containers are data: the structures a model takes and returns are flattened to tensors
plus a description made of plain data, and rebuilt into the user's own types.

Rules:
- any structure ``torch.utils._pytree`` flattens is data: tuples, lists, dicts,
  dataclasses registered with pytree, Hugging Face ``ModelOutput`` (transformers registers
  every subclass when it is defined) and the classes registered here;
- Hugging Face caches (every ``Cache`` subclass, and any class transformers counts as a
  cache) are registered as pytree nodes the first time :func:`register_containers` runs
  (before an export traces the model, and wherever outputs are flattened), through
  transformers' own registration
  (``transformers.exporters.exporter_dynamo.register_pytree_node``: the cache's tensors
  are the leaves, everything else a JSON-native context, rebuilt as the same class); only
  when the ``transformers`` module is already imported, so a model without it pays
  nothing; a transformers without that function leaves caches as they are (then the
  backends that need tensors record the type they cannot take);
- a structure is described by :func:`structure_of`: torch's own JSON serialisation of the
  spec (``treespec_dumps``), or, where a node type has no serialised name, a JSON
  description of type names, contexts and children; either is a plain string, so it is
  stored beside the tensors and read back with ``torch.load(weights_only=True)`` (nothing
  is unpickled), and two structures are the same when their descriptions are equal;
- a stored spec names its node types by dotted path: :func:`import_named` imports them
  (and registers the caches among them) before the spec is read back in a fresh process.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import re
import sys
from typing import Any, Final

import torch
import torch.utils._pytree as pytree

_REGISTERED: set[type] = set()
_ROUNDS: Final = 8
"""How many nesting levels of newly met container types one call registers."""


def _transformers_registration() -> tuple[Any, Any] | None:
    """transformers' ``(is_cache_object, register_pytree_node)``, when it is imported and
    has them."""
    if "transformers" not in sys.modules:
        return None
    try:
        from transformers.exporters.exporter_dynamo import (
            is_cache_object,
            register_pytree_node,
        )
    except Exception:
        return None
    return is_cache_object, register_pytree_node


def register_containers(tree: Any) -> None:
    """Register every cache type met in ``tree`` as a pytree node (see the rules); a no-op
    when there is none.

    >>> register_containers({"x": torch.ones(1), "n": 3})
    """
    found = _transformers_registration()
    if found is None:
        return
    is_cache, register = found
    _register_cache_classes(register)
    for _ in range(_ROUNDS):
        fresh = {
            type(leaf)
            for leaf in pytree.tree_leaves(tree)
            if not isinstance(leaf, torch.Tensor) and is_cache(leaf)
        } - _REGISTERED
        if not fresh:
            return
        for cls in fresh:
            register(cls)
            _REGISTERED.add(cls)


def _register_cache_classes(register: Any) -> None:
    """Register every ``transformers.cache_utils.Cache`` subclass defined so far (what
    ``torch.export`` needs before it traces a model that returns one)."""
    try:
        from transformers.cache_utils import Cache
    except Exception:
        return
    todo = list(Cache.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls not in _REGISTERED:
            register(cls)
            _REGISTERED.add(cls)


def flatten(tree: Any) -> tuple[list[Any], pytree.TreeSpec]:
    """``tree``'s leaves and spec, its containers registered first.

    >>> leaves, spec = flatten({"a": torch.zeros(2), "b": (1, torch.ones(1))})
    >>> len(leaves), spec.num_leaves
    (3, 3)
    """
    register_containers(tree)
    return pytree.tree_flatten(tree)


def structure_of(spec: pytree.TreeSpec) -> str:
    """A plain-string description of ``spec`` (see the rules): equal for equal structures.

    >>> structure_of(flatten((torch.zeros(1), {"k": 2}))[1]) == structure_of(
    ...     flatten((torch.ones(3), {"k": 5}))[1])
    True
    """
    try:
        return pytree.treespec_dumps(spec)
    except Exception:  # a node type without a serialised name: describe it ourselves
        return json.dumps(_described(spec), sort_keys=True, default=repr)


def _described(spec: pytree.TreeSpec) -> Any:
    """A JSON-able description of ``spec``: ``"*"`` for a leaf, else type, context, children."""
    if spec.is_leaf():
        return "*"
    kind = spec.type
    name = f"{kind.__module__}.{kind.__qualname__}" if kind is not None else "None"
    return {
        "type": name,
        "context": spec.context,
        "children": [_described(c) for c in spec.children_specs],
    }


_TYPE_NAME: Final = re.compile(r'"([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*[.:][A-Za-z_]\w*)"')
"""A dotted (``pkg.mod.Class``) or colon (``pkg.mod:Class``) type name in a stored spec."""


def import_named(text: str) -> None:
    """Import the modules of the type names in a stored structure ``text`` (and register
    the caches among them), so ``treespec_loads`` knows those types here; names that do
    not import are left for the loader to report.

    >>> import_named('{"type": "collections.OrderedDict", "x": "not.a.real.Module"}')
    """
    for name in set(_TYPE_NAME.findall(text)):
        module_name, _, _ = name.rpartition(":") if ":" in name else name.rpartition(".")
        with contextlib.suppress(Exception):
            importlib.import_module(module_name)
    register_containers(None)  # the cache classes just imported
