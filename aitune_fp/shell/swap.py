"""``swap``: a new pipeline with one submodule replaced, by path copying.

Rules:
- ``swap(root, "unet.mid_block", new)`` returns a new root in which the object at the
  dotted path is ``new``; ``root`` and everything reachable from it are left unchanged;
- only the objects along the path are copied, shallowly (as persistent data structures
  do): every other submodule, parameter and buffer is shared, so swapping inside a
  multi-GB pipeline costs no memory;
- a path step is an attribute (``text_encoder``), a child of a module container
  (``layers.0`` in a ``ModuleList``/``Sequential``, a key of a ``ModuleDict``), an item of
  a list/tuple (an index) or of a dict (a key); a step that does not exist is a
  ``ValueError`` naming the path so far;
- a copied ``nn.Module`` gets its own child, parameter, buffer and hook tables (copies of
  the original's), so registering on the new root never touches the old one; frozen
  dataclasses are copied with ``dataclasses.replace``, other objects with ``copy.copy``;
- a value that is not a module (a ``TunedGenerator`` standing in for a language model)
  replacing a child module becomes a plain attribute of the copy, so the copy's module
  tables hold modules only; a pipeline object (``transformers`` pipeline, a user's object
  holding ``.model``) gets it as an attribute.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import torch

_TABLES = (
    "_modules",
    "_parameters",
    "_buffers",
    "_forward_hooks",
    "_forward_pre_hooks",
    "_forward_hooks_with_kwargs",
    "_forward_pre_hooks_with_kwargs",
    "_forward_hooks_always_called",
    "_backward_hooks",
    "_backward_pre_hooks",
    "_state_dict_hooks",
    "_state_dict_pre_hooks",
    "_load_state_dict_pre_hooks",
    "_load_state_dict_post_hooks",
    "_non_persistent_buffers_set",
)


def _child(node: Any, step: str, where: str) -> Any:
    if isinstance(node, torch.nn.Module) and step in node._modules:
        return node._modules[step]
    if isinstance(node, dict):
        if step in node:
            return node[step]
        raise ValueError(f"{where}: no key {step!r}")
    if isinstance(node, list | tuple):
        if step.lstrip("-").isdigit() and -len(node) <= int(step) < len(node):
            return node[int(step)]
        raise ValueError(f"{where}: no index {step!r} in a {type(node).__name__} of {len(node)}")
    if hasattr(node, step):
        return getattr(node, step)
    raise ValueError(f"{where}: a {type(node).__name__} has no attribute {step!r}")


def _copy_module(module: torch.nn.Module) -> torch.nn.Module:
    new = copy.copy(module)
    for name in _TABLES:
        table = module.__dict__.get(name)
        if table is not None:
            new.__dict__[name] = copy.copy(table)
    return new


def _with(node: Any, step: str, value: Any) -> Any:
    """A shallow copy of ``node`` with its ``step`` set to ``value``."""
    if isinstance(node, torch.nn.Module):
        new = _copy_module(node)
        if step in new._modules and (value is None or isinstance(value, torch.nn.Module)):
            new._modules[step] = value
        else:  # a stand-in that is not a module (a TunedGenerator) is a plain attribute
            new._modules.pop(step, None)
            object.__setattr__(new, step, value)
        return new
    if isinstance(node, dict):
        return {**node, step: value}
    if isinstance(node, list | tuple):
        items = list(node)
        items[int(step)] = value
        return type(node)(items) if isinstance(node, list) else tuple(items)
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        return dataclasses.replace(node, **{step: value})
    new = copy.copy(node)
    setattr(new, step, value)
    return new


def swap(root: Any, path: str, new_module: Any) -> Any:
    """A new ``root`` with the object at ``path`` replaced by ``new_module``.

    >>> net = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU())
    >>> swapped = swap(net, "1", torch.nn.Tanh())
    >>> type(net[1]).__name__, type(swapped[1]).__name__, swapped[0] is net[0]
    ('ReLU', 'Tanh', True)
    """
    steps = path.split(".") if path else []
    if not steps or any(not s for s in steps):
        raise ValueError(f"path {path!r} must be dotted names, e.g. 'unet.mid_block'")
    chain = [root]
    for i, step in enumerate(steps[:-1]):
        chain.append(_child(chain[-1], step, f"path {'.'.join(steps[: i + 1])!r}"))
    _child(chain[-1], steps[-1], f"path {path!r}")  # the target must exist
    value = new_module
    for node, step in zip(reversed(chain), reversed(steps), strict=True):
        value = _with(node, step, value)
    return value
