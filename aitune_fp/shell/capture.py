"""``capture``: record the inputs a submodule receives while the user runs their pipeline.

Rules:
- ``with capture(module, limit=64) as captured:`` registers a forward pre-hook on
  ``module`` and removes it on exit, also when the block raises; the pipeline runs as
  usual (the hook changes nothing it computes);
- each call's tensors are copied (detached clones, on their own device), those inside
  containers too (a ``DynamicCache`` is rebuilt around clones of its keys and values,
  :mod:`aitune_fp.effects.inputs.containers`), so later in-place changes by the pipeline cannot
  alter what was recorded; keyword arguments that are
  ``None`` are dropped (the module's default), any other non-tensor argument is kept as it
  was passed (tuning refuses it with a clear error);
- recording stops at ``limit`` calls or once ``max_bytes`` of tensors are held, whichever
  comes first; later calls are counted in ``captured.skipped``;
- ``captured.samples`` are the recorded calls, usable as ``tune_module``'s samples, each
  in the form it was made: a tensor, a tuple of positional tensors, a dict of keyword
  tensors, or a :class:`~aitune_fp.effects.inputs.samples.Call` of both (positional inputs are
  ``input_0`` …, or index ``0`` … in ``dynamic_axes``);
  ``captured.batched`` says which convention they follow: ``True`` when every call's
  tensors agree on the size of axis 0 (what a batched module receives), else ``False``
  (items, collated by ``tune_module(..., batched=False)``); ``batched=`` overrides it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.utils._pytree as pytree

from aitune_fp.effects.inputs.containers import flatten
from aitune_fp.effects.inputs.samples import Call

DEFAULT_MAX_BYTES = 1 << 30

CapturedCall = torch.Tensor | tuple[object, ...] | dict[str, object] | Call
"""One recorded call as a sample: a tensor, a tuple of arguments, keywords, or both."""


@dataclass(slots=True)
class Captured:
    """The calls recorded so far (filled while the ``capture`` block runs)."""

    limit: int
    max_bytes: int
    forced: bool | None = None
    calls: list[CapturedCall] = field(default_factory=list)
    nbytes: int = 0
    skipped: int = 0

    @property
    def samples(self) -> list[CapturedCall]:
        """The recorded calls as samples: a tensor, a tuple of tensors or a dict each."""
        return list(self.calls)

    @property
    def batched(self) -> bool:
        """Whether the samples carry the batch axis (see the module rules)."""
        if self.forced is not None:
            return self.forced
        return bool(self.calls) and all(_leading_agrees(c) for c in self.calls)

    def record(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Keep one call, or count it as skipped when the bounds are reached."""
        if len(self.calls) >= self.limit:
            self.skipped += 1
            return
        kept = {k: v for k, v in kwargs.items() if v is not None}
        size = sum(t.numel() * t.element_size() for t in _tensors(args, kept))
        if self.calls and self.nbytes + size > self.max_bytes:
            self.skipped += 1
            return
        self.nbytes += size
        self.calls.append(
            _as_sample(tuple(_copy(a) for a in args), {k: _copy(v) for k, v in kept.items()})
        )


def _as_sample(args: tuple[Any, ...], kwargs: dict[str, Any]) -> CapturedCall:
    """One call as a sample: its keywords, its one tensor, its arguments, or both.

    >>> one = torch.zeros(1)
    >>> type(_as_sample((one,), {})).__name__, _as_sample((), {"x": one}).keys()
    ('Tensor', dict_keys(['x']))
    >>> len(_as_sample((one, one), {})), type(_as_sample((one,), {"x": one})).__name__
    (2, 'Call')
    """
    if kwargs and not args:
        return kwargs
    if len(args) == 1 and not kwargs:
        return args[0]  # type: ignore[no-any-return]
    if not kwargs:
        return args
    return Call(args, kwargs)


def _copy(value: Any) -> Any:
    """A copy of one argument: a tensor cloned, a container (a KV cache, a dataclass, …)
    rebuilt around clones of its tensors, anything else as it is."""
    leaves, spec = flatten(value)
    if spec.is_leaf() and not isinstance(value, torch.Tensor):
        return value
    clones = [t.detach().clone() if isinstance(t, torch.Tensor) else t for t in leaves]
    return pytree.tree_unflatten(clones, spec)


def _tensors(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[torch.Tensor]:
    return [v for v in flatten((args, kwargs))[0] if isinstance(v, torch.Tensor)]


def _leading_agrees(call: Any) -> bool:
    if isinstance(call, Call):
        values: Any = (*call.args, *call.kwargs.values())
    elif isinstance(call, dict):
        values = call.values()
    else:
        values = call if isinstance(call, tuple) else [call]
    tensors = [v for v in values if isinstance(v, torch.Tensor)]
    if not tensors or any(t.dim() == 0 for t in tensors):
        return False
    return len({int(t.shape[0]) for t in tensors}) == 1


@contextmanager
def capture(
    module: torch.nn.Module,
    limit: int = 64,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    batched: bool | None = None,
) -> Iterator[Captured]:
    """Record up to ``limit`` calls of ``module`` (``max_bytes`` of tensors at most).

    >>> lin = torch.nn.Linear(3, 2)
    >>> with capture(lin, limit=2) as captured:
    ...     for _ in range(3):
    ...         _ = lin(torch.ones(4, 3))
    >>> len(captured.samples), captured.skipped, captured.batched
    (2, 1, True)
    """
    if limit < 1 or max_bytes < 1:
        raise ValueError(f"limit and max_bytes must be >= 1, got {limit} and {max_bytes}")
    captured = Captured(limit, max_bytes, batched)

    def hook(_: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        captured.record(args, kwargs)

    handle = module.register_forward_pre_hook(hook, with_kwargs=True)
    try:
        yield captured
    finally:
        handle.remove()
