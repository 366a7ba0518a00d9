"""A save's input spec as JSON, and the all-zeros sample a recipe is rebuilt from.

Rules: the JSON keeps the positional and keyword names, each tensor's name, row shape and
dtype, the batch axis, the dynamic axes and, for structured calls, the call tree
(:func:`~aitune_fp.effects.inputs.call_tree.tree_to_json`); reading it back gives an equal spec,
and an unknown dtype, a bad dynamic axis or a tree that cannot be rebuilt is a
:class:`~aitune_fp.shell.sealed.LoadError` (manifests written before dynamic axes have
none); it is decoded strictly by msgspec (:mod:`aitune_fp.core.record.json_codec`), a
value of the wrong type naming its path. The all-zeros sample of a structured spec
rebuilds the user's containers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from aitune_fp.core.record.json_codec import from_json
from aitune_fp.effects.inputs.call_tree import tree_from_json, tree_to_json
from aitune_fp.effects.inputs.dynamic import dynamic_to_json, with_dynamic
from aitune_fp.effects.inputs.samples import Call, InputSpec, Samples, TensorSpec, normalise_samples
from aitune_fp.shell.sealed import LoadError


def spec_to_json(spec: InputSpec) -> dict[str, Any]:
    """An input spec as JSON: positional and keyword names, tensors, batch axis, dynamic axes.

    >>> spec = normalise_samples([torch.zeros(2, 3)]).spec
    >>> doc = spec_to_json(spec)
    >>> doc["positional"], doc["tensors"], doc["batch_axis"]
    (['input_0'], [{'name': 'input_0', 'row_shape': [3], 'dtype': 'float32'}], 0)
    """
    return {
        "positional": list(spec.positional),
        "keywords": list(spec.keywords),
        "tensors": [
            {"name": t.name, "row_shape": list(t.row_shape), "dtype": t.dtype} for t in spec.tensors
        ],
        "batch_axis": spec.batch_axis,
        "dynamic": dynamic_to_json(spec),
    } | ({} if spec.tree is None else {"tree": tree_to_json(spec.tree)})


@dataclass(frozen=True, slots=True)
class _Written:
    """An input spec as :func:`spec_to_json` writes it."""

    positional: tuple[str, ...]
    keywords: tuple[str, ...]
    tensors: tuple[TensorSpec, ...]
    batch_axis: int
    dynamic: tuple[Mapping[str, object], ...] = ()
    tree: Mapping[str, object] | None = None


def spec_from_json(data: Any, where: str = "input_spec") -> InputSpec:
    """An input spec from :func:`spec_to_json`'s output; an unknown dtype is a ``LoadError``.

    >>> spec = normalise_samples([torch.zeros(2, 3)]).spec
    >>> spec_from_json(spec_to_json(spec)) == spec
    True
    >>> bad = {**spec_to_json(spec), "tensors": [{"name": "x", "row_shape": [3], "dtype": "bogus"}]}
    >>> spec_from_json(bad)
    Traceback (most recent call last):
    ...
    aitune_fp.shell.sealed.LoadError: input_spec: unknown dtype 'bogus'
    """
    doc = from_json(data, _Written, where)
    for t in doc.tensors:
        if not isinstance(getattr(torch, t.dtype, None), torch.dtype):
            raise LoadError(f"{where}: unknown dtype {t.dtype!r}")
    try:  # manifests written before dynamic axes (or trees) have none
        tree = None if doc.tree is None else tree_from_json(doc.tree)
        spec = InputSpec(doc.positional, doc.keywords, doc.tensors, doc.batch_axis, tree)
        return with_dynamic(spec, list(doc.dynamic))
    except (ValueError, KeyError, TypeError) as error:
        raise LoadError(f"{where}: {error}") from None


def zero_samples(spec: InputSpec) -> Samples:
    """One all-zeros sample of batch size 1 matching ``spec`` (for rebuilding a recipe).

    >>> zeros = zero_samples(normalise_samples([torch.ones(4, 3)]).spec)
    >>> zeros.rows, zeros.items[0].args[0].abs().sum().item()
    (1, 0.0)
    """
    tensors = {
        t.name: torch.zeros(t.shape(1, spec.batch_axis), dtype=getattr(torch, t.dtype))
        for t in spec.tensors
    }
    if spec.tree is not None:
        call = Call(*spec.tree.rebuild(tensors))
        return normalise_samples(call, batch_axis=spec.batch_axis)
    args = [tensors[n] for n in spec.positional]
    if spec.keywords:
        if args:
            raise LoadError("a recipe with both positional and keyword inputs cannot be rebuilt")
        return normalise_samples({k: tensors[k] for k in spec.keywords}, batch_axis=spec.batch_axis)
    return normalise_samples([tuple(args)], batch_axis=spec.batch_axis)
