"""Dynamic batching's tensor work: requests merged into batches and outputs split back.

Rules:
- requests that agree on every input's dtype and every size but the batch axis form one
  group; a group is cut, in arrival order, into batches of at most ``max_rows`` rows, each
  run as one call of the model on the inputs concatenated along the batch axis;
- each output leaf is split back along the batch axis by the requests' rows; a model whose
  outputs do not carry the batch on that axis runs its requests one at a time instead;
- a batch whose call raises hands the exception to each of its requests (the caller turns
  it into a response), and the other batches still run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.utils._pytree as pytree


@dataclass(frozen=True, slots=True)
class Request:
    """One request's call of the model: positional and keyword tensors, and its rows."""

    args: tuple[torch.Tensor, ...]
    kwargs: Mapping[str, torch.Tensor] = field(default_factory=dict)
    rows: int = 1

    def signature(self, batch_axis: int) -> tuple[Any, ...]:
        """What requests must share to be batched: dtypes and non-batch sizes."""
        tensors = (*self.args, *(self.kwargs[k] for k in sorted(self.kwargs)))
        return tuple(
            (t.dtype, tuple(s for i, s in enumerate(t.shape) if i != batch_axis)) for t in tensors
        )


def total_rows(requests: Sequence[Request]) -> int:
    """The rows of ``requests`` together (Ray Serve's ``batch_size_fn``).

    >>> total_rows([Request((torch.zeros(2, 3),), {}, 2), Request((torch.zeros(5, 3),), {}, 5)])
    7
    """
    return sum(r.rows for r in requests)


def _chunks(group: Sequence[int], requests: Sequence[Request], max_rows: int) -> list[list[int]]:
    chunks: list[list[int]] = []
    rows = 0
    for index in group:
        size = requests[index].rows
        if not chunks or rows + size > max_rows:
            chunks.append([])
            rows = 0
        chunks[-1].append(index)
        rows += size
    return chunks


def _merged(batch: Sequence[Request], axis: int) -> Request:
    first = batch[0]
    args = tuple(torch.cat([r.args[i] for r in batch], axis) for i in range(len(first.args)))
    kwargs = {k: torch.cat([r.kwargs[k] for r in batch], axis) for k in first.kwargs}
    return Request(args, kwargs, total_rows(batch))


def _split(outputs: Any, batch: Sequence[Request], axis: int) -> list[Any] | None:
    leaves, spec = pytree.tree_flatten(outputs)
    rows = [r.rows for r in batch]
    total = sum(rows)
    if not all(
        isinstance(t, torch.Tensor) and t.dim() > axis and t.shape[axis] == total for t in leaves
    ):
        return None
    parts = [torch.split(t, rows, axis) for t in leaves]
    return [pytree.tree_unflatten([p[i] for p in parts], spec) for i in range(len(batch))]


def run_batches(
    run: Callable[..., Any], requests: Sequence[Request], batch_axis: int, max_rows: int
) -> tuple[list[Any], list[int]]:
    """Each request's outputs (or the exception its batch raised), in request order, and
    the rows of every batch that ran (see the module rules)."""
    results: list[Any] = [None] * len(requests)
    groups: dict[tuple[Any, ...], list[int]] = {}
    for index, request in enumerate(requests):
        groups.setdefault(request.signature(batch_axis), []).append(index)
    sizes: list[int] = []
    with torch.inference_mode():
        for group in groups.values():
            for chunk in _chunks(group, requests, max_rows):
                batch = [requests[i] for i in chunk]
                merged = _merged(batch, batch_axis) if len(batch) > 1 else batch[0]
                try:
                    outputs = run(*merged.args, **merged.kwargs)
                    split = [outputs] if len(batch) == 1 else _split(outputs, batch, batch_axis)
                    if split is None:
                        split = [run(*r.args, **r.kwargs) for r in batch]
                        sizes.extend(r.rows for r in batch)
                    else:
                        sizes.append(merged.rows)
                except Exception as error:
                    split = [error] * len(batch)
                    sizes.append(merged.rows)
                for i, result in zip(chunk, split, strict=True):
                    results[i] = result
    return results, sizes
