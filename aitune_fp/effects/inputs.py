"""User samples → an immutable input spec and batches built from all samples.

Rules:
- a sample is what a user passes to ``module(...)``: a tensor, a tuple/list of tensors
  (positional arguments) or a dict of tensors (keyword arguments); ``samples`` is one such
  sample or a sequence of them;
- every sample carries the batch axis (``batch_axis``, 0 by default); its rows are pooled,
  and a batch of size N takes rows ``0 … N-1`` of that pool, cycling, so every user sample
  contributes rather than sample 0 repeated;
- samples must agree on structure, names, dtypes and every non-batch dimension; an empty
  sample list, a non-tensor leaf or a mismatch is a ``ValueError`` before any build.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True, slots=True)
class TensorSpec:
    """One input tensor: its name, per-row shape (batch axis removed) and dtype."""

    name: str
    row_shape: tuple[int, ...]
    dtype: str

    def shape(self, batch_size: int, batch_axis: int) -> tuple[int, ...]:
        """The full shape at ``batch_size``."""
        dims = list(self.row_shape)
        dims.insert(batch_axis, batch_size)
        return tuple(dims)


@dataclass(frozen=True, slots=True)
class InputSpec:
    """The structure of a module's inputs: positional names, keyword names, tensors, axis.

    ``positional`` and ``keywords`` name the tensors in call order; ``tensors`` holds their
    specs in the same order (positional first).
    """

    positional: tuple[str, ...]
    keywords: tuple[str, ...]
    tensors: tuple[TensorSpec, ...]
    batch_axis: int = 0

    @property
    def names(self) -> tuple[str, ...]:
        """Every input name in call order."""
        return (*self.positional, *self.keywords)

    def bytes_per_row(self) -> int:
        """Bytes one batch row of every input takes (for memory guards)."""
        total = 0
        for t in self.tensors:
            n = 1
            for d in t.row_shape:
                n *= d
            total += n * torch.empty((), dtype=getattr(torch, t.dtype)).element_size()
        return total


@dataclass(frozen=True, slots=True)
class Batch:
    """One call's inputs: positional tensors and keyword tensors, with its batch size."""

    args: tuple[torch.Tensor, ...]
    kwargs: Mapping[str, torch.Tensor]
    size: int

    def call(self, fn: Any) -> Any:
        """``fn(*args, **kwargs)``."""
        return fn(*self.args, **dict(self.kwargs))

    def flat(self) -> tuple[torch.Tensor, ...]:
        """Every tensor in call order (positional then keywords)."""
        return (*self.args, *self.kwargs.values())

    def to(self, device: torch.device | str) -> Batch:
        """The same batch on ``device``."""
        return Batch(
            tuple(a.to(device) for a in self.args),
            {k: v.to(device) for k, v in self.kwargs.items()},
            self.size,
        )


@dataclass(frozen=True, slots=True)
class Samples:
    """The user's samples, normalised: the spec and each sample as a :class:`Batch`."""

    spec: InputSpec
    items: tuple[Batch, ...]

    @property
    def rows(self) -> int:
        """How many batch rows all samples hold together."""
        return sum(b.size for b in self.items)


def _as_batch(sample: Any, index: int, batch_axis: int) -> Batch:
    if isinstance(sample, torch.Tensor):
        args: tuple[Any, ...] = (sample,)
        kwargs: dict[str, Any] = {}
    elif isinstance(sample, Mapping):
        args, kwargs = (), dict(sample)
    elif isinstance(sample, tuple | list):
        args, kwargs = tuple(sample), {}
    else:
        raise ValueError(
            f"sample {index} is a {type(sample).__name__}; expected a tensor, a tuple/list "
            "of tensors or a dict of tensors"
        )
    leaves = {**{f"input_{i}": a for i, a in enumerate(args)}, **kwargs}
    if not leaves:
        raise ValueError(f"sample {index} holds no tensors")
    sizes = set()
    for name, leaf in leaves.items():
        if not isinstance(leaf, torch.Tensor):
            raise ValueError(
                f"sample {index} input {name!r} is a {type(leaf).__name__}, not a tensor; "
                "backends can only take tensors"
            )
        if leaf.dim() <= batch_axis:
            raise ValueError(
                f"sample {index} input {name!r} has shape {tuple(leaf.shape)}, "
                f"no batch axis {batch_axis}"
            )
        sizes.add(int(leaf.shape[batch_axis]))
    if len(sizes) != 1:
        raise ValueError(f"sample {index} inputs disagree on the batch size: {sorted(sizes)}")
    return Batch(tuple(args), kwargs, sizes.pop())


def _spec_of(batch: Batch, batch_axis: int) -> InputSpec:
    positional = tuple(f"input_{i}" for i in range(len(batch.args)))
    keywords = tuple(batch.kwargs)
    tensors = tuple(
        TensorSpec(
            name,
            tuple(int(d) for i, d in enumerate(t.shape) if i != batch_axis),
            str(t.dtype).removeprefix("torch."),
        )
        for name, t in zip((*positional, *keywords), batch.flat(), strict=True)
    )
    return InputSpec(positional, keywords, tensors, batch_axis)


def normalise_samples(samples: Any, *, batch_axis: int = 0) -> Samples:
    """Check the user's samples and derive their spec.

    >>> s = normalise_samples([torch.zeros(2, 3), torch.ones(1, 3)])
    >>> s.spec.tensors[0], s.rows
    (TensorSpec(name='input_0', row_shape=(3,), dtype='float32'), 3)
    >>> normalise_samples([])
    Traceback (most recent call last):
    ...
    ValueError: no samples given: pass at least one sample input
    """
    if batch_axis < 0:
        raise ValueError(f"batch_axis must be >= 0, got {batch_axis}")
    if isinstance(samples, torch.Tensor | Mapping):
        seq: Sequence[Any] = [samples]
    elif (
        isinstance(samples, tuple) and samples and all(isinstance(s, torch.Tensor) for s in samples)
    ):
        seq = [samples]  # one sample of positional tensors
    elif isinstance(samples, Sequence) and not isinstance(samples, str | bytes):
        seq = samples
    else:
        raise ValueError(f"samples must be a tensor, a dict or a sequence, got {type(samples)}")
    if len(seq) == 0:
        raise ValueError("no samples given: pass at least one sample input")
    batches = tuple(_as_batch(s, i, batch_axis) for i, s in enumerate(seq))
    spec = _spec_of(batches[0], batch_axis)
    for i, b in enumerate(batches[1:], start=1):
        other = _spec_of(b, batch_axis)
        if other != spec:
            raise ValueError(f"sample {i} does not match sample 0: {other} vs {spec}")
    return Samples(spec, batches)


def make_batch(samples: Samples, batch_size: int, *, offset: int = 0) -> Batch:
    """A batch of ``batch_size`` rows taken from all samples' rows, cycling from ``offset``.

    >>> s = normalise_samples([torch.tensor([[0.0]]), torch.tensor([[1.0]])])
    >>> make_batch(s, 3).args[0].flatten().tolist()
    [0.0, 1.0, 0.0]
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    axis = samples.spec.batch_axis
    total = samples.rows
    index = torch.tensor([(offset + i) % total for i in range(batch_size)])

    def gather(parts: Sequence[torch.Tensor]) -> torch.Tensor:
        pool = torch.cat(list(parts), dim=axis) if len(parts) > 1 else parts[0]
        return pool.index_select(axis, index.to(pool.device)).contiguous()

    n_args = len(samples.spec.positional)
    args = tuple(gather([b.args[i] for b in samples.items]) for i in range(n_args))
    kwargs = {k: gather([b.kwargs[k] for b in samples.items]) for k in samples.spec.keywords}
    return Batch(args, kwargs, batch_size)
