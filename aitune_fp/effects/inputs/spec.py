"""The input spec's records: tensors, their dynamic axes, a module's inputs, one call's batch.

Rule: plain frozen records (no sample handling here; :mod:`aitune_fp.effects.inputs.samples` builds
them from the user's samples and :mod:`aitune_fp.effects.inputs.dynamic` derives dynamic axes).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

import torch

from aitune_fp.effects.inputs.call_tree import CallTree


@dataclass(frozen=True, slots=True)
class Call:
    """A sample given as positional and keyword inputs at once: ``module(*args, **kwargs)``."""

    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class DynamicAxis:
    """One dynamic axis of one input.

    ``axis`` indexes the full shape (batch axis included); ``min``/``max`` bound it
    (inclusive); ``opt`` is the size the samples use most (the median row's); ``dim`` names
    the shared dimension (axes of several inputs that always agree share one, e.g. the
    sequence axis of ``input_ids`` and ``attention_mask``); ``inferred`` is ``True`` when
    the samples, not the user, made it dynamic.
    """

    axis: int
    min: int
    max: int
    opt: int
    dim: str
    inferred: bool = False


@dataclass(frozen=True, slots=True)
class TensorSpec:
    """One input tensor: its name, per-row shape (batch axis removed), dtype, dynamic axes.

    ``row_shape`` holds the first sample's sizes; a dynamic axis may take any size in its
    range.
    """

    name: str
    row_shape: tuple[int, ...]
    dtype: str
    dynamic: tuple[DynamicAxis, ...] = ()

    def shape(
        self, batch_size: int, batch_axis: int, sizes: Mapping[str, int] | None = None
    ) -> tuple[int, ...]:
        """The full shape at ``batch_size``; dynamic axes take ``sizes[dim]`` when given.

        >>> t = TensorSpec("ids", (16,), "int64", (DynamicAxis(1, 8, 64, 16, "seq"),))
        >>> t.shape(4, 0), t.shape(4, 0, {"seq": 64})
        ((4, 16), (4, 64))
        """
        dims = list(self.row_shape)
        dims.insert(batch_axis, batch_size)
        for d in self.dynamic:
            if sizes is not None and d.dim in sizes:
                dims[d.axis] = sizes[d.dim]
        return tuple(dims)

    def profile(
        self, batch_sizes: tuple[int, int, int], batch_axis: int
    ) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """(min, opt, max) shapes for an optimisation profile at the (min, opt, max) batch.

        >>> t = TensorSpec("ids", (16,), "int64", (DynamicAxis(1, 8, 64, 24, "seq"),))
        >>> t.profile((1, 4, 8), 0)
        ((1, 8), (4, 24), (8, 64))
        """
        lo, opt, hi = batch_sizes
        return (
            self.shape(lo, batch_axis, {d.dim: d.min for d in self.dynamic}),
            self.shape(opt, batch_axis, {d.dim: d.opt for d in self.dynamic}),
            self.shape(hi, batch_axis, {d.dim: d.max for d in self.dynamic}),
        )


@dataclass(frozen=True, slots=True)
class InputSpec:
    """The structure of a module's inputs: positional names, keyword names, tensors, axis.

    ``positional`` and ``keywords`` name the tensors in call order; ``tensors`` holds their
    specs in the same order (positional first). ``tree`` is the first sample's
    :class:`~aitune_fp.effects.inputs.call_tree.CallTree` when the calls are structured (then every
    tensor leaf is a keyword by its leaf name).
    """

    positional: tuple[str, ...]
    keywords: tuple[str, ...]
    tensors: tuple[TensorSpec, ...]
    batch_axis: int = 0
    tree: CallTree | None = None

    @property
    def names(self) -> tuple[str, ...]:
        """Every input name in call order."""
        return (*self.positional, *self.keywords)

    def dims(self) -> dict[str, DynamicAxis]:
        """Every shared dynamic dimension by name (its first axis stands for it)."""
        found: dict[str, DynamicAxis] = {}
        for t in self.tensors:
            for d in t.dynamic:
                found.setdefault(d.dim, d)
        return found

    def sizes(self, which: str) -> dict[str, int]:
        """Every dynamic dimension at its ``"min"``, ``"opt"`` or ``"max"``."""
        return {name: int(getattr(d, which)) for name, d in self.dims().items()}

    def bytes_per_row(self) -> int:
        """Bytes one batch row of every input takes at its largest (for memory guards)."""
        largest = self.sizes("max")
        total = 0
        for t in self.tensors:
            n = 1
            for i, d in enumerate(t.shape(1, self.batch_axis, largest)):
                n *= 1 if i == self.batch_axis else d
            total += n * torch.empty((), dtype=getattr(torch, t.dtype)).element_size()
        return total


@dataclass(frozen=True, slots=True)
class Batch:
    """One call's inputs: positional tensors and keyword tensors, with its batch size.

    A structured call (:mod:`aitune_fp.effects.inputs.call_tree`) has no positional tensors: its
    tensor leaves are ``kwargs`` by leaf name and ``tree`` rebuilds the user's call.
    """

    args: tuple[torch.Tensor, ...]
    kwargs: Mapping[str, torch.Tensor]
    size: int
    tree: CallTree | None = None

    def call(self, fn: Any) -> Any:
        """``fn(*args, **kwargs)``, the user's containers rebuilt afresh when structured."""
        if self.tree is not None:
            return self.tree.call(fn, self.kwargs)
        return fn(*self.args, **dict(self.kwargs))

    def bound(self, fn: Callable[..., Any]) -> Callable[[], Any]:
        """``fn`` bound to this call with ``partial``, so a timed call builds no arguments
        beyond Python's own call (a structured call rebuilds its containers each time)."""
        if self.tree is not None:
            return partial(self.tree.call, fn, self.kwargs)
        return partial(fn, *self.args, **dict(self.kwargs))

    def flat(self) -> tuple[torch.Tensor, ...]:
        """Every tensor in call order (positional then keywords)."""
        return (*self.args, *self.kwargs.values())

    def with_tensors(self, fn: Any, size: int | None = None) -> Batch:
        """The same call with ``fn(name, tensor)`` for every tensor input (at ``size`` rows
        when given); a structured call's tensor constants stay whole."""
        args = tuple(fn(f"input_{i}", a) for i, a in enumerate(self.args))
        kwargs = {k: fn(k, v) for k, v in self.kwargs.items()}
        return Batch(args, kwargs, self.size if size is None else size, self.tree)

    def to(self, device: torch.device | str) -> Batch:
        """The same batch on ``device``."""
        tree = None if self.tree is None else self.tree.map_constants(lambda t: t.to(device))
        return Batch(
            tuple(a.to(device) for a in self.args),
            {k: v.to(device) for k, v in self.kwargs.items()},
            self.size,
            tree,
        )

    def shapes(self) -> str:
        """Each input's shape and dtype, for error messages."""
        names = [f"input_{i}" for i in range(len(self.args))] + list(self.kwargs)
        return ", ".join(
            f"{n} {tuple(t.shape)} {str(t.dtype).removeprefix('torch.')}"
            for n, t in zip(names, self.flat(), strict=True)
        )
