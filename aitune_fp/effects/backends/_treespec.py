"""Reading a ``torch.export`` call spec without deprecated pytree accessors.

Rules:
- a child of a ``TreeSpec`` is read with ``TreeSpec.child(index)``, the accessor torch 2.13
  supports (``children_specs`` emits a ``FutureWarning`` there); torch releases without
  ``child`` (before it was added) fall back to the ``children_specs`` list;
- a program's call spec is ``(args, kwargs)``: its keyword names are the context of child 1
  (``()`` for a call without keywords).
"""

from __future__ import annotations

from typing import Any


def child_spec(spec: Any, index: int) -> Any:
    """Child ``index`` of a pytree ``TreeSpec``.

    >>> import torch.utils._pytree as pytree
    >>> child_spec(pytree.tree_flatten(((1, 2), {"a": 3}))[1], 1).context
    ['a']
    """
    child = getattr(spec, "child", None)
    if callable(child):
        return child(index)
    return spec.children_specs[index]


def keyword_names(in_spec: Any) -> tuple[str, ...]:
    """The keyword names of an ``(args, kwargs)`` call spec, in the spec's order.

    >>> import torch.utils._pytree as pytree
    >>> keyword_names(pytree.tree_flatten(((1,), {"mask": 2, "x": 3}))[1])
    ('mask', 'x')
    """
    kwargs = child_spec(in_spec, 1)
    return tuple(kwargs.context) if kwargs.context else ()
