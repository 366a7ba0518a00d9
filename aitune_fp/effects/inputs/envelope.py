"""The tuned envelope: the calls a tuned backend was built, validated and profiled for.

Rules:
- a call is inside when it has the spec's structure (as many positional tensors, the same
  keyword names; for structured calls, :mod:`aitune_fp.effects.inputs.call_tree`, the same
  containers, whose tensor leaves are then checked as inputs by leaf name), every input
  has the spec's dtype and rank, its batch size is in
  ``[1, max_batch_size]`` (unbounded when ``None``), every dynamic axis is in its range and
  every other axis has the tuned size, and the inputs agree on the batch size and on every
  shared dynamic dimension;
- with a ``device`` (the device the backend was built for: TensorRT and ONNX Runtime's CUDA
  runners bind ``data_ptr()`` as a device address, so a tensor elsewhere would hand them a
  host pointer or another GPU's memory), every input must be on that device (a CUDA
  device without an index means the device current when the envelope is made);
  :meth:`Envelope.device_reason` names an input that is not, and such a call is refused,
  never run;
- :meth:`Envelope.admits` is the per-call check: its verdict is a function of the inputs'
  shapes and dtypes (and devices, with a ``device``), memoised by them (a bounded memo, the
  one mutable part, which changes no verdict), so a repeated shape costs a lookup;
  :meth:`Envelope.reason` says in words why a call is outside (only computed then).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from aitune_fp.effects.inputs.call_tree import CallTree
from aitune_fp.effects.inputs.samples import InputSpec

MEMO_SIZE = 1024


def _picker(keywords: tuple[str, ...]) -> Callable[[Mapping[str, Any]], tuple[Any, ...]]:
    """A getter of ``keywords`` from a call's keyword dict, in that order, as a tuple."""
    if not keywords:
        return lambda kwargs: ()
    if len(keywords) == 1:
        (only,) = keywords
        return lambda kwargs: (kwargs[only],)
    return operator.itemgetter(*keywords)


@dataclass(frozen=True, slots=True)
class Envelope:
    """The shapes, dtypes and structure a tuned module admits (see the module rules).

    ``bounds`` holds, per input in spec order, its dtype and ``(lo, hi)`` per axis;
    ``shared`` the ``(input, axis)`` pairs that must agree (batch axes, shared dims).

    >>> from aitune_fp.effects.inputs.samples import normalise_samples
    >>> s = normalise_samples([torch.zeros(1, 8), torch.zeros(1, 12)])
    >>> env = Envelope.of(s.spec, max_batch_size=4)
    >>> env.admits((torch.zeros(4, 10),), {}), env.admits((torch.zeros(5, 10),), {})
    (True, False)
    >>> env.reason((torch.zeros(2, 13),), {})
    'input_0 axis 1 is 13, outside the tuned range 8..12'
    """

    names: tuple[str, ...]
    n_positional: int
    keywords: tuple[str, ...]
    keyset: frozenset[str]
    bounds: tuple[tuple[torch.dtype, tuple[tuple[int, int], ...]], ...]
    shared: tuple[tuple[tuple[int, int], ...], ...]
    pick: Callable[[Mapping[str, Any]], tuple[Any, ...]] = field(compare=False, repr=False)
    memo: dict[Any, bool] = field(default_factory=dict, compare=False, repr=False)
    device: torch.device | None = None
    tree: CallTree | None = None

    @classmethod
    def of(
        cls,
        spec: InputSpec,
        max_batch_size: int | None = None,
        device: torch.device | str | None = None,
    ) -> Envelope:
        """The envelope of ``spec`` with batches up to ``max_batch_size`` (inputs on
        ``device`` when given)."""
        hi_batch = max_batch_size if max_batch_size is not None else 2**62
        bounds = []
        by_dim: dict[str, list[tuple[int, int]]] = {}
        for i, t in enumerate(spec.tensors):
            axes = [(d, d) for d in t.shape(1, spec.batch_axis)]
            axes[spec.batch_axis] = (1, hi_batch)
            for d in t.dynamic:
                axes[d.axis] = (d.min, d.max)
                by_dim.setdefault(d.dim, []).append((i, d.axis))
            bounds.append((getattr(torch, t.dtype), tuple(axes)))
        batch = tuple((i, spec.batch_axis) for i in range(len(spec.tensors)))
        shared = tuple(g for g in (batch, *map(tuple, by_dim.values())) if len(g) > 1)
        return cls(
            spec.names,
            len(spec.positional),
            spec.keywords,
            frozenset(spec.keywords),
            tuple(bounds),
            shared,
            _picker(spec.keywords),
            device=None if device is None else _resolved(torch.device(device)),
            tree=spec.tree,
        )

    def _leaves(
        self, args: tuple[Any, ...], kwargs: Mapping[str, Any]
    ) -> tuple[tuple[Any, ...], Mapping[str, Any]] | None:
        """The call as the spec names its inputs: a structured call's tensor leaves by name
        (``None``: its containers are not the tuned ones)."""
        if self.tree is None:
            return args, kwargs
        leaves = self.tree.tensors_of(args, kwargs)
        return None if leaves is None else ((), leaves)

    def _tensors(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> tuple[Any, ...]:
        return (*args, *(kwargs[k] for k in self.keywords))

    def admits(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> bool:
        """Whether the call ``(*args, **kwargs)`` is inside the envelope.

        The verdict depends only on the inputs' shapes and dtypes, so it is memoised by
        them: a call with a shape seen before costs reading each input's shape and dtype
        and one dictionary lookup (the memo holds at most :data:`MEMO_SIZE` shapes).
        """
        if self.tree is not None:
            call = self._leaves(args, kwargs)
            if call is None:
                return False
            args, kwargs = call
        if len(args) != self.n_positional or len(kwargs) != len(self.keywords):
            return False
        try:
            tensors = (*args, *self.pick(kwargs)) if kwargs else args
            key: tuple[Any, ...]
            if self.device is None:
                key = tuple([(t.shape, t.dtype) for t in tensors])
            else:
                key = tuple([(t.shape, t.dtype, t.device) for t in tensors])
        except (AttributeError, KeyError):
            return False
        verdict = self.memo.get(key)
        if verdict is None:
            verdict = self._inside(args, kwargs)
            if len(self.memo) >= MEMO_SIZE:
                self.memo.clear()
            self.memo[key] = verdict
        return verdict

    def _inside(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> bool:
        """The full check of one call (see the module rules)."""
        if kwargs.keys() != self.keyset:
            return False
        tensors = self._tensors(args, kwargs)
        device = self.device
        for t, (dtype, axes) in zip(tensors, self.bounds, strict=True):
            if not isinstance(t, torch.Tensor) or t.dtype != dtype:
                return False
            if device is not None and t.device != device:
                return False
            shape = t.shape
            if len(shape) != len(axes):
                return False
            for size, (lo, hi) in zip(shape, axes, strict=True):
                if size < lo or size > hi:
                    return False
        for group in self.shared:
            (i, a), *rest = group
            size = tensors[i].shape[a]
            for j, b in rest:
                if tensors[j].shape[b] != size:
                    return False
        return True

    def reason(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str:
        """Why ``(*args, **kwargs)`` is outside the envelope (``"inside"`` when it is not)."""
        call = self._leaves(args, kwargs)
        if call is None:
            return "the call's containers are not the tuned ones"
        args, kwargs = call
        if len(args) != self.n_positional or set(kwargs) != self.keyset:
            return (
                f"the call has {len(args)} positional inputs and keywords {sorted(kwargs)}; "
                f"tuned for {self.n_positional} positional and keywords {sorted(self.keyset)}"
            )
        tensors = self._tensors(args, kwargs)
        for name, t, (dtype, axes) in zip(self.names, tensors, self.bounds, strict=True):
            if not isinstance(t, torch.Tensor):
                return f"{name} is a {type(t).__name__}, not a tensor"
            if t.dtype != dtype:
                return f"{name} is {t.dtype}, tuned for {dtype}"
            if self.device is not None and t.device != self.device:
                return f"{name} is on {t.device}, tuned for {self.device}"
            if t.dim() != len(axes):
                return f"{name} has shape {tuple(t.shape)}, tuned for {len(axes)} dimensions"
            for axis, (size, (lo, hi)) in enumerate(zip(t.shape, axes, strict=True)):
                if lo == hi and size != lo:
                    return f"{name} axis {axis} is {size}, tuned for {lo}"
                if not lo <= size <= hi:
                    return f"{name} axis {axis} is {size}, outside the tuned range {lo}..{hi}"
        for group in self.shared:
            sizes = {f"{self.names[i]} axis {a}": int(tensors[i].shape[a]) for i, a in group}
            if len(set(sizes.values())) > 1:
                return f"inputs disagree on a shared dimension: {sizes}"
        return "inside"

    def device_reason(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str | None:
        """Why the call's tensors are not on the envelope's device, or ``None`` (also when
        the envelope has no device or the call's structure is wrong)."""
        call = self._leaves(args, kwargs)
        if self.device is None or call is None:
            return None
        args, kwargs = call
        tensors = (*args, *(kwargs[k] for k in self.keywords if k in kwargs))
        for name, t in zip(self.names, tensors, strict=False):
            if isinstance(t, torch.Tensor) and t.device != self.device:
                return (
                    f"{name} is on {t.device}, the backend runs on {self.device} "
                    f"(move the inputs there: .to({str(self.device)!r}))"
                )
        return None


def _resolved(device: torch.device) -> torch.device:
    """A CUDA device without an index as the device current now (when CUDA is usable).

    >>> _resolved(torch.device("cpu")), _resolved(torch.device("cuda", 1))
    (device(type='cpu'), device(type='cuda', index=1))
    """
    if device.type == "cuda" and device.index is None and torch.cuda.is_available():
        return torch.device("cuda", torch.cuda.current_device())
    return device
