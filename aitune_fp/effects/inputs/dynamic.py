"""Dynamic axes: which input dimensions besides the batch may vary, and within what range.

Rules:
- the user declares axes per input: ``{"input_ids": {1: (8, 64)}, 0: {2: (16, 64)}}``;
  a key is a keyword-input name, a positional name ``input_N`` or a positional index
  ``N``; an axis indexes the batched shape and may not be the batch axis (the batch-size
  sweep governs it); a range is inclusive, ``1 <= min <= max``, and must hold every
  sample's size;
- an undeclared axis along which the samples differ is dynamic too, over the sizes seen
  (``inferred=True``);
- axes of different inputs whose sizes agree in every sample share one dimension when at
  least one of them is dynamic (the sequence axis of ``input_ids`` and ``attention_mask``):
  an undeclared axis joins a declared one and takes its range; two declared axes share a
  dimension only when their ranges agree too. Axes of the same input never share one;
- a dimension's ``opt`` is the median row's size (TensorRT's optimisation point).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aitune_fp.effects.inputs.spec import Batch, DynamicAxis, InputSpec, TensorSpec


@dataclass(frozen=True, slots=True)
class _Axis:
    tensor: int
    axis: int
    sizes: tuple[int, ...]
    declared: tuple[int, int] | None


def _resolve_key(key: str | int, names: Sequence[str], positional: int) -> int:
    if isinstance(key, bool) or not isinstance(key, str | int):
        raise ValueError(f"dynamic_axes key {key!r} must be an input name or a positional index")
    if isinstance(key, int):
        if not 0 <= key < positional:
            raise ValueError(
                f"dynamic_axes key {key}: the module takes {positional} positional inputs"
            )
        return key
    if key in names:
        return names.index(key)
    raise ValueError(f"dynamic_axes key {key!r} is not an input; inputs are {list(names)}")


def _declared(
    declared: Mapping[str | int, Mapping[int, tuple[int, int]]],
    names: Sequence[str],
    positional: int,
    ranks: Sequence[int],
    batch_axis: int,
) -> dict[tuple[int, int], tuple[int, int]]:
    """``{(tensor index, axis): (min, max)}`` from the user's declaration, checked."""
    out: dict[tuple[int, int], tuple[int, int]] = {}
    for key, axes in declared.items():
        tensor = _resolve_key(key, names, positional)
        if not isinstance(axes, Mapping):
            raise ValueError(f"dynamic_axes[{key!r}] must map an axis to (min, max)")
        for axis, bounds in axes.items():
            where = f"dynamic_axes[{key!r}][{axis!r}]"
            if isinstance(axis, bool) or not isinstance(axis, int):
                raise ValueError(f"{where}: an axis is an integer")
            if not 0 <= axis < ranks[tensor]:
                raise ValueError(f"{where}: input {names[tensor]!r} has {ranks[tensor]} dimensions")
            if axis == batch_axis:
                raise ValueError(
                    f"{where}: axis {axis} is the batch axis, which the batch-size sweep governs"
                )
            if (
                not isinstance(bounds, tuple | list)
                or len(bounds) != 2
                or not all(isinstance(b, int) and not isinstance(b, bool) for b in bounds)
                or not 1 <= bounds[0] <= bounds[1]
            ):
                raise ValueError(
                    f"{where}: expected (min, max) with 1 <= min <= max, got {bounds!r}"
                )
            out[(tensor, axis)] = (int(bounds[0]), int(bounds[1]))
    return out


def _median(sizes: Sequence[int], weights: Sequence[int]) -> int:
    rows = sorted(s for s, w in zip(sizes, weights, strict=True) for _ in range(w))
    return rows[len(rows) // 2]


def dynamic_spec(
    batches: Sequence[Batch],
    batch_axis: int,
    declared: Mapping[str | int, Mapping[int, tuple[int, int]]],
) -> InputSpec:
    """The input spec of ``batches`` (which agree on names, dtypes and ranks).

    >>> import torch
    >>> b = [Batch((), {"ids": torch.zeros(1, n), "mask": torch.ones(1, n)}, 1) for n in (8, 12)]
    >>> spec = dynamic_spec(b, 0, {"ids": {1: (4, 16)}})
    >>> [t.dynamic for t in spec.tensors]  # doctest: +NORMALIZE_WHITESPACE
    [(DynamicAxis(axis=1, min=4, max=16, opt=12, dim='ids_1', inferred=False),),
     (DynamicAxis(axis=1, min=4, max=16, opt=12, dim='ids_1', inferred=True),)]
    """
    first = batches[0]
    positional = len(first.args)
    names = (*(f"input_{i}" for i in range(positional)), *first.kwargs)
    ranks = [t.dim() for t in first.flat()]
    user = _declared(declared, names, positional, ranks, batch_axis)
    weights = [b.size for b in batches]
    axes = [
        _Axis(ti, a, tuple(int(b.flat()[ti].shape[a]) for b in batches), user.get((ti, a)))
        for ti in range(len(names))
        for a in range(ranks[ti])
        if a != batch_axis
    ]
    for ax in axes:
        if ax.declared is not None:
            lo, hi = ax.declared
            bad = [s for s in ax.sizes if not lo <= s <= hi]
            if bad:
                raise ValueError(
                    f"dynamic_axes for {names[ax.tensor]!r} axis {ax.axis}: range {lo}..{hi} "
                    f"does not hold the samples' sizes {sorted(set(bad))}"
                )
    dynamic = {
        (ax.tensor, ax.axis): ax for ax in axes if ax.declared is not None or len(set(ax.sizes)) > 1
    }
    found: dict[tuple[int, int], DynamicAxis] = {}
    ordered = sorted(dynamic.items(), key=lambda kv: kv[1].declared is None)
    for key, ax in ordered:  # declared first, then inferred, each in input order
        if key in found:
            continue
        members = [ax] + [
            o
            for o in axes
            if o.tensor != ax.tensor
            and (o.tensor, o.axis) not in found
            and o.sizes == ax.sizes
            and (o.declared is None or o.declared == ax.declared)
        ]
        members = [
            m for i, m in enumerate(members) if m.tensor not in {x.tensor for x in members[:i]}
        ]
        lo, hi = ax.declared or (min(ax.sizes), max(ax.sizes))
        name = f"{names[ax.tensor]}_{ax.axis}".replace(".", "_")
        opt = _median(ax.sizes, weights)
        for m in members:
            found[(m.tensor, m.axis)] = DynamicAxis(
                m.axis, lo, hi, opt, name, inferred=m.declared is None
            )
    tensors = tuple(
        TensorSpec(
            name,
            tuple(int(d) for a, d in enumerate(t.shape) if a != batch_axis),
            str(t.dtype).removeprefix("torch."),
            tuple(found[(ti, a)] for a in range(t.dim()) if (ti, a) in found),
        )
        for ti, (name, t) in enumerate(zip(names, first.flat(), strict=True))
    )
    return InputSpec(names[:positional], tuple(first.kwargs), tensors, batch_axis, first.tree)


def dynamic_to_json(spec: InputSpec) -> list[dict[str, Any]]:
    """Every dynamic axis as JSON: input, axis, range, opt, dimension, inferred.

    >>> import torch
    >>> from aitune_fp.effects.inputs.samples import normalise_samples
    >>> spec = normalise_samples([torch.zeros(1, 4)], dynamic_axes={0: {1: (2, 8)}}).spec
    >>> [(a["input"], a["axis"], a["min"], a["max"]) for a in dynamic_to_json(spec)]
    [('input_0', 1, 2, 8)]
    """
    return [
        {
            "input": t.name,
            "axis": d.axis,
            "min": d.min,
            "max": d.max,
            "opt": d.opt,
            "dim": d.dim,
            "inferred": d.inferred,
        }
        for t in spec.tensors
        for d in t.dynamic
    ]


def _axis_entry(entry: Mapping[str, Any]) -> tuple[str, DynamicAxis]:
    """The input name and dynamic axis of one :func:`dynamic_to_json` entry (a
    ``ValueError`` names a bad one)."""
    try:
        d = DynamicAxis(
            int(entry["axis"]),
            int(entry["min"]),
            int(entry["max"]),
            int(entry["opt"]),
            str(entry["dim"]),
            bool(entry["inferred"]),
        )
        return str(entry["input"]), d
    except (KeyError, TypeError, ValueError) as error:
        raise ValueError(f"bad dynamic axis {dict(entry)!r}: {error}") from None


def with_dynamic(spec: InputSpec, axes: Sequence[Mapping[str, Any]]) -> InputSpec:
    """``spec`` with the dynamic axes of :func:`dynamic_to_json`'s output (a ``ValueError``
    names a bad entry).

    >>> import torch
    >>> from aitune_fp.effects.inputs.samples import normalise_samples
    >>> spec = normalise_samples([torch.zeros(1, 4)], dynamic_axes={0: {1: (2, 8)}}).spec
    >>> with_dynamic(spec, dynamic_to_json(spec)) == spec
    True
    >>> with_dynamic(spec, [{**dynamic_to_json(spec)[0], "input": "mask"}])
    Traceback (most recent call last):
    ...
    ValueError: dynamic axis of unknown input 'mask'
    """
    by_input: dict[str, list[DynamicAxis]] = {}
    for entry in axes:
        name, d = _axis_entry(entry)
        if name not in spec.names:
            raise ValueError(f"dynamic axis of unknown input {name!r}")
        by_input.setdefault(name, []).append(d)
    tensors = tuple(
        dataclasses.replace(t, dynamic=tuple(by_input.get(t.name, ()))) for t in spec.tensors
    )
    return dataclasses.replace(spec, tensors=tensors)
