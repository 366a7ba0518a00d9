"""A call whose inputs hold containers, as named tensor leaves plus what rebuilds the call.

Rules:
- a call ``(args, kwargs)`` is *structured* when one of its inputs is not a tensor: a
  tuple, dict, dataclass, Hugging Face ``ModelOutput``, ``DynamicCache``/``StaticCache`` or
  any other class :func:`aitune_fp.effects.inputs.containers.flatten` can flatten (plain values,
  ``True`` or ``None``, count too); a call of tensors only is never structured;
- :func:`split_call` flattens it with :mod:`aitune_fp.effects.inputs.containers` (no second
  flattener): every tensor leaf that has the batch axis gets a name, ``input_N`` or the
  keyword, followed by its pytree path (``cache[0]``, ``pair.a``); every other leaf (a
  plain value, a tensor with no batch axis such as a scalar position) is a *constant* kept
  whole, in its place;
- :meth:`CallTree.call` rebuilds fresh containers of the user's types from the tensors on
  every call, with fresh copies of the tensor constants, so a container the module updates
  in place (a ``DynamicCache`` appends each step, a ``StaticCache`` advances its length)
  never carries one call's update into the next;
- two trees are equal when their structure and leaf names are; constants do not take part
  (samples may differ in a scalar position);
- :func:`tree_to_json` writes a tree as JSON (the structure as pytree's own text, a 0-d
  tensor constant as its value and dtype) and :func:`tree_from_json` reads it back; a
  constant that is neither plain data nor a 0-d tensor is a ``ValueError`` at writing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.utils._pytree as pytree

from aitune_fp.effects.inputs.containers import (
    PLAIN,
    describe,
    flatten,
    labelled,
    read_spec,
    register_spec,
)


@dataclass(frozen=True, slots=True)
class CallTree:
    """How a structured call is rebuilt from its named tensor leaves.

    ``spec`` is the pytree spec of ``(args, kwargs)``; ``names`` holds, per leaf, the name
    of the tensor that fills it or ``None`` for a constant; ``constants`` the constant per
    leaf (``None`` where a tensor goes); ``types`` names the type of every input that is
    not a tensor, ``(input, type name)``, for the failures of backends that refuse it.
    """

    spec: pytree.TreeSpec
    names: tuple[str | None, ...]
    constants: tuple[Any, ...] = field(compare=False)
    types: tuple[tuple[str, str], ...] = field(compare=False, default=())

    @property
    def tensor_names(self) -> tuple[str, ...]:
        """The names of the tensor leaves, in pytree order."""
        return tuple(n for n in self.names if n is not None)

    def rebuild(self, tensors: Mapping[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """Fresh ``(args, kwargs)`` of the user's types holding ``tensors`` by name."""
        leaves = [
            _fresh(c) if n is None else tensors[n]
            for n, c in zip(self.names, self.constants, strict=True)
        ]
        try:
            args, kwargs = pytree.tree_unflatten(leaves, self.spec)
        except KeyError:  # unpickled where its types are not registered yet
            register_spec(self.spec)
            args, kwargs = pytree.tree_unflatten(leaves, self.spec)
        return tuple(args), dict(kwargs)

    def call(self, fn: Callable[..., Any], tensors: Mapping[str, Any]) -> Any:
        """``fn`` called with the call rebuilt from ``tensors``."""
        args, kwargs = self.rebuild(tensors)
        return fn(*args, **kwargs)

    def map_constants(self, fn: Callable[[torch.Tensor], torch.Tensor]) -> CallTree:
        """The same tree with ``fn`` applied to every tensor constant."""
        constants = tuple(fn(c) if isinstance(c, torch.Tensor) else c for c in self.constants)
        return CallTree(self.spec, self.names, constants, self.types)

    def describe(self) -> str:
        """Each input that is not a tensor with its type (for messages).

        >>> split_call((), {"x": torch.zeros(2), "n": 3}, 0)[0].describe()
        "input 'n' is a int"
        """
        return "; ".join(f"input {name!r} is a {kind}" for name, kind in self.types)

    def tensors_of(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any] | None:
        """The named tensor leaves of a user's call with this structure (``None``: another
        structure, or a tensor leaf that is not a tensor)."""
        leaves, spec = flatten((tuple(args), dict(kwargs)))
        if spec != self.spec:
            return None
        found = {n: leaf for n, leaf in zip(self.names, leaves, strict=True) if n is not None}
        return found if all(isinstance(t, torch.Tensor) for t in found.values()) else None


def _fresh(constant: Any) -> Any:
    """A copy of a tensor constant (a model may advance a position in place), else itself."""
    return constant.clone() if isinstance(constant, torch.Tensor) else constant


def is_structured(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> bool:
    """Whether one of the call's inputs is not a tensor.

    >>> is_structured((torch.zeros(1),), {}), is_structured((), {"n": None})
    (False, True)
    """
    return not all(isinstance(v, torch.Tensor) for v in (*args, *kwargs.values()))


def _batched(leaf: Any, batch_axis: int, batched: bool) -> bool:
    """Whether a leaf is a tensor carrying the batch axis (or, unbatched, one to gain it)."""
    return isinstance(leaf, torch.Tensor) and (not batched or leaf.dim() > batch_axis)


def split_call(
    args: tuple[Any, ...], kwargs: Mapping[str, Any], batch_axis: int, batched: bool = True
) -> tuple[CallTree, dict[str, torch.Tensor]]:
    """The tree of a structured call and its named batched tensors (see the rules).

    >>> tree, tensors = split_call((), {"ids": torch.zeros(2, 3), "pair": (torch.ones(2), 4)}, 0)
    >>> list(tensors), tree.names, tree.types
    (['ids', 'pair[0]'], ('ids', 'pair[0]', None), (('pair', 'tuple'),))
    """
    call = (tuple(args), dict(kwargs))
    roots = [f"input_{i}" for i in range(len(args))] + list(kwargs)
    values = [*args, *kwargs.values()]
    named: list[tuple[str, Any]] = []
    for root, value in zip(roots, values, strict=True):
        named += labelled(value, root)[0]
    leaves, spec = flatten(call)
    names = tuple(n if _batched(v, batch_axis, batched) else None for n, v in named)
    constants = tuple(None if n is not None else v for n, v in zip(names, leaves, strict=True))
    tensors = {n: v for n, v in zip(names, leaves, strict=True) if n is not None}
    return CallTree(spec, names, constants, _container_types(roots, values)), tensors


def _container_types(roots: list[str], values: list[Any]) -> tuple[tuple[str, str], ...]:
    """``(root, type name)`` of each argument that is not a tensor (a container)."""
    return tuple(
        (root, type(v).__name__)
        for root, v in zip(roots, values, strict=True)
        if not isinstance(v, torch.Tensor)
    )


def _constant_json(value: Any) -> Any:
    if isinstance(value, torch.Tensor) and value.dim() == 0:
        return {"tensor": value.item(), "dtype": str(value.dtype).removeprefix("torch.")}
    if isinstance(value, PLAIN):
        return value
    raise ValueError(f"a {type(value).__name__} kept whole in an input cannot be written as JSON")


def _constant(doc: Any) -> Any:
    if isinstance(doc, dict):
        return torch.tensor(doc["tensor"], dtype=getattr(torch, doc["dtype"]))
    return doc


def tree_to_json(tree: CallTree) -> dict[str, Any]:
    """``tree`` as JSON (see the rules).

    >>> tree, _ = split_call((), {"x": torch.zeros(2), "pos": torch.tensor(3)}, 0)
    >>> doc = tree_to_json(tree)
    >>> doc["names"], doc["constants"]
    (['x', None], [None, {'tensor': 3, 'dtype': 'int64'}])
    >>> back = tree_from_json(doc)
    >>> back == tree, back.rebuild({"x": torch.ones(1)})[1]["pos"]
    (True, tensor(3))
    """
    return {
        "structure": describe(tree.spec),
        "names": list(tree.names),
        "constants": [_constant_json(c) for c in tree.constants],
        "types": [list(t) for t in tree.types],
    }


def tree_from_json(doc: Mapping[str, Any]) -> CallTree:
    """The tree :func:`tree_to_json` wrote (``ValueError`` when its structure cannot be
    rebuilt here)."""
    return CallTree(
        read_spec(str(doc["structure"])),
        tuple(doc["names"]),
        tuple(_constant(c) for c in doc["constants"]),
        tuple((str(a), str(b)) for a, b in doc["types"]),
    )
