"""User samples → an immutable input spec and batches built from all samples.

Rules:
- a sample is what a user passes to ``module(...)``: a tensor, a tuple/list (positional arguments),
  a dict (keyword arguments) or a :class:`Call` of both (what :func:`aitune_fp.capture` records for
  a mixed call); ``samples`` is one such sample or a sequence of them;
- an input may be a container pytree flattens (tuples, dicts, dataclasses, ``ModelOutput``,
  ``DynamicCache``, ...; :mod:`aitune_fp.effects.inputs.call_tree`): its tensor leaves are inputs
  named by their path and batched like any tensor, a leaf with no batch axis (a scalar
  position, a plain value) is kept whole and taken from the sample holding a batch's first
  row, and every call rebuilds the user's containers;
- with ``batched=True`` (the default) every sample carries the batch axis (``batch_axis``,
  0 by default); with ``batched=False`` every sample is one item without it, as a dataset
  hands them out, and gets a batch axis of size 1 inserted (collated); nothing guesses
  which convention the samples follow;
- rows are pooled: a batch of size N takes N rows, cycling, from the samples that share
  the shape of the row at ``offset`` (so every user sample contributes, and a rotating pool
  of offsets visits every shape the user gave);
- samples must agree on structure, names, dtypes and rank; an axis other than the batch
  axis along which they differ is dynamic (inferred, see :mod:`aitune_fp.effects.inputs.dynamic`),
  and so is every axis the user declares in ``dynamic_axes`` (a leaf of a container by its
  name); an empty sample list, a sample with no batched tensor or a mismatch (containers
  included) is a ``ValueError`` before any build; longer than 260 lines: the spec and its
  batches are one conversion of the user's samples.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from aitune_fp.effects.inputs.call_tree import CallTree, is_structured, split_call
from aitune_fp.effects.inputs.dynamic import dynamic_spec
from aitune_fp.effects.inputs.spec import (
    Batch,
    Call,
    DynamicAxis,
    InputSpec,
    TensorSpec,
)

__all__ = [
    "Batch",
    "Call",
    "DynamicAxis",
    "InputSpec",
    "Samples",
    "TensorSpec",
    "batch_at",
    "make_batch",
    "normalise_samples",
]


@dataclass(frozen=True, slots=True)
class Samples:
    """The user's samples, normalised: the spec, each sample as a :class:`Batch`.

    ``groups`` lists the indices of the samples sharing one shape, in order of first
    appearance; ``batched`` says whether the user's samples carried the batch axis.
    """

    spec: InputSpec
    items: tuple[Batch, ...]
    groups: tuple[tuple[int, ...], ...] = ()
    batched: bool = True

    @property
    def rows(self) -> int:
        """How many batch rows all samples hold together."""
        return sum(b.size for b in self.items)

    def shape_groups(self) -> tuple[tuple[int, ...], ...]:
        """``groups``, or one group of every sample when none were recorded."""
        return self.groups or (tuple(range(len(self.items))),)

    def to(self, device: torch.device | str) -> Samples:
        """The same samples on ``device``."""
        return Samples(
            self.spec, tuple(b.to(device) for b in self.items), self.groups, self.batched
        )


def _call_of(sample: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The ``(args, kwargs)`` a sample stands for (any other value is one positional input)."""
    if isinstance(sample, Mapping):
        return (), dict(sample)
    if isinstance(sample, Call):
        return tuple(sample.args), dict(sample.kwargs)
    if isinstance(sample, tuple | list):
        return tuple(sample), {}
    return (sample,), {}


def _checked(leaves: Mapping[str, torch.Tensor], index: int, batch_axis: int, batched: bool) -> int:
    """The batch size the named tensors agree on (a ``ValueError`` names the problem)."""
    if not leaves:
        raise ValueError(f"sample {index} holds no tensors with a batch axis")
    for name, leaf in leaves.items():
        if not batched and leaf.dim() < batch_axis:
            raise ValueError(
                f"item {index} input {name!r} has shape {tuple(leaf.shape)}: too few "
                f"dimensions to insert batch axis {batch_axis}"
            )
        if batched and leaf.dim() <= batch_axis:
            raise ValueError(
                f"sample {index} input {name!r} has shape {tuple(leaf.shape)}, "
                f"no batch axis {batch_axis} (items without a batch axis: batched=False)"
            )
    sizes = {int(t.shape[batch_axis]) if batched else 1 for t in leaves.values()}
    if len(sizes) != 1:
        raise ValueError(f"sample {index} inputs disagree on the batch size: {sorted(sizes)}")
    return sizes.pop()


def _as_batch(sample: Any, index: int, batch_axis: int, batched: bool) -> Batch:
    args, kwargs = _call_of(sample)
    if is_structured(args, kwargs):
        tree, tensors = split_call(args, kwargs, batch_axis, batched)
        size = _checked(tensors, index, batch_axis, batched)
        batch = Batch((), tensors, size, tree)
    else:
        size = _checked(
            {**{f"input_{i}": a for i, a in enumerate(args)}, **kwargs}, index, batch_axis, batched
        )
        batch = Batch(args, kwargs, size)
    if batched:
        return batch
    return batch.with_tensors(lambda _, t: t.unsqueeze(batch_axis))


def _structure(batch: Batch) -> tuple[Any, ...]:
    """The names, dtypes and ranks of a batch's inputs and its call tree (what every sample
    must share)."""
    names = (*(f"input_{i}" for i in range(len(batch.args))), *batch.kwargs)
    kinds = tuple((str(t.dtype).removeprefix("torch."), t.dim()) for t in batch.flat())
    return names, kinds, batch.tree


def _sequence(samples: Any) -> Sequence[Any]:
    if isinstance(samples, torch.Tensor | Mapping | Call):
        return [samples]
    if isinstance(samples, tuple) and samples and all(isinstance(s, torch.Tensor) for s in samples):
        return [samples]  # one sample of positional tensors
    if isinstance(samples, Sequence) and not isinstance(samples, str | bytes):
        return samples
    raise ValueError(f"samples must be a tensor, a dict or a sequence, got {type(samples)}")


def normalise_samples(
    samples: Any,
    *,
    batch_axis: int = 0,
    batched: bool = True,
    dynamic_axes: Mapping[str | int, Mapping[int, tuple[int, int]]] | None = None,
) -> Samples:
    """Check the user's samples and derive their spec.

    ``dynamic_axes`` maps an input (keyword name, ``input_N`` or positional index ``N``)
    to ``{axis: (min, max)}`` (inclusive; axes index the batched shape).

    >>> s = normalise_samples([torch.zeros(2, 3), torch.ones(1, 3)])
    >>> s.spec.tensors[0], s.rows
    (TensorSpec(name='input_0', row_shape=(3,), dtype='float32', dynamic=()), 3)
    >>> normalise_samples([torch.zeros(5)] * 8, batched=False).items[0].args[0].shape
    torch.Size([1, 5])
    >>> normalise_samples([])
    Traceback (most recent call last):
    ...
    ValueError: no samples given: pass at least one sample input
    """
    if batch_axis < 0:
        raise ValueError(f"batch_axis must be >= 0, got {batch_axis}")
    seq = _sequence(samples)
    if len(seq) == 0:
        raise ValueError("no samples given: pass at least one sample input")
    batches = tuple(_as_batch(s, i, batch_axis, batched) for i, s in enumerate(seq))
    first = _structure(batches[0])
    for i, b in enumerate(batches[1:], start=1):
        other = _structure(b)
        if other[2] != first[2]:
            raise ValueError(
                f"sample {i} does not match sample 0: its containers have another structure "
                f"({_tree_text(other[2])} vs {_tree_text(first[2])})"
            )
        if other != first:
            raise ValueError(
                f"sample {i} does not match sample 0: names, dtypes and ranks "
                f"{list(zip(other[0], other[1], strict=True))} vs "
                f"{list(zip(first[0], first[1], strict=True))}"
            )
    spec = dynamic_spec(batches, batch_axis, dynamic_axes or {})
    return Samples(spec, batches, _groups(batches, batch_axis), batched)


def _tree_text(tree: CallTree | None) -> str:
    return "tensors only" if tree is None else f"{tree.describe()}, leaves {tree.tensor_names}"


def _groups(batches: Sequence[Batch], batch_axis: int) -> tuple[tuple[int, ...], ...]:
    by_shape: dict[tuple[tuple[int, ...], ...], list[int]] = {}
    for i, b in enumerate(batches):
        key = tuple(tuple(d for a, d in enumerate(t.shape) if a != batch_axis) for t in b.flat())
        by_shape.setdefault(key, []).append(i)
    return tuple(tuple(v) for v in by_shape.values())


def _group_at(samples: Samples, offset: int) -> tuple[tuple[int, ...], int]:
    """The shape group holding row ``offset`` (cycling) and that row's place in it."""
    groups = samples.shape_groups()
    if len(groups) == 1:
        return groups[0], offset % max(samples.rows, 1)
    row = offset % samples.rows
    seen = 0
    owner = 0
    for i, b in enumerate(samples.items):
        if row < seen + b.size:
            owner = i
            break
        seen += b.size
    group = next(g for g in groups if owner in g)
    local = sum(samples.items[i].size for i in group if i < owner) + row - seen
    return group, local


def make_batch(samples: Samples, batch_size: int, *, offset: int = 0) -> Batch:
    """A batch of ``batch_size`` rows from the samples of one shape, cycling from ``offset``.

    >>> s = normalise_samples([torch.tensor([[0.0]]), torch.tensor([[1.0]])])
    >>> make_batch(s, 3).args[0].flatten().tolist()
    [0.0, 1.0, 0.0]
    >>> s = normalise_samples([torch.zeros(1, 2), torch.ones(1, 3), torch.ones(1, 2)])
    >>> make_batch(s, 3).args[0].shape, make_batch(s, 3, offset=1).args[0].shape
    (torch.Size([3, 2]), torch.Size([3, 3]))
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    axis = samples.spec.batch_axis
    group, start = _group_at(samples, offset)
    items = [samples.items[i] for i in group]
    total = sum(b.size for b in items)
    index = torch.tensor([(start + i) % total for i in range(batch_size)])

    def gather(parts: Sequence[torch.Tensor]) -> torch.Tensor:
        pool = torch.cat(list(parts), dim=axis) if len(parts) > 1 else parts[0]
        return pool.index_select(axis, index.to(pool.device)).contiguous()

    n_args = len(samples.spec.positional)
    args = tuple(gather([b.args[i] for b in items]) for i in range(n_args))
    kwargs = {k: gather([b.kwargs[k] for b in items]) for k in samples.spec.keywords}
    return Batch(args, kwargs, batch_size, _owner(items, start).tree)


def _owner(items: Sequence[Batch], row: int) -> Batch:
    """The item holding ``row`` of the pooled ``items`` (whose constants a batch keeps)."""
    for item in items:
        if row < item.size:
            return item
        row -= item.size
    return items[-1]


def _resized(t: torch.Tensor, axis: int, size: int) -> torch.Tensor:
    """``t`` cut to ``size`` along ``axis``, repeated cyclically first when too short."""
    have = int(t.shape[axis])
    if size > have:
        reps = [1] * t.dim()
        reps[axis] = -(-size // have)
        t = t.repeat(*reps)
    return t.narrow(axis, 0, size).contiguous()


def batch_at(
    samples: Samples, batch_size: int, sizes: Mapping[str, int], *, offset: int = 0
) -> Batch:
    """:func:`make_batch` with every dynamic dimension set to ``sizes[dim]``.

    A shorter size keeps the first positions of the samples; a longer one repeats them
    cyclically, so the values stay the user's (token ids stay in the vocabulary).

    >>> s = normalise_samples(
    ...     [torch.arange(4.0).reshape(1, 4)], dynamic_axes={0: {1: (2, 6)}}
    ... )
    >>> batch_at(s, 1, {"input_0_1": 6}).args[0].tolist()
    [[0.0, 1.0, 2.0, 3.0, 0.0, 1.0]]
    """
    batch = make_batch(samples, batch_size, offset=offset)
    spec = samples.spec

    def resized(t: torch.Tensor, ts: TensorSpec) -> torch.Tensor:
        for d in ts.dynamic:
            if d.dim in sizes:
                t = _resized(t, d.axis, sizes[d.dim])
        return t

    by_name = dict(zip(spec.names, spec.tensors, strict=True))
    return batch.with_tensors(lambda name, t: resized(t, by_name[name]))
