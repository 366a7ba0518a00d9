"""Shared pieces for backends that trace the module: example batch, dynamic dims, layout.

Rules:
- tracing uses a batch of :data:`EXAMPLE_BATCH` rows built from the user's samples, so the
  batch dimension is never specialised to 0 or 1 — but never more rows than the tune's
  envelope allows (:func:`batch_envelope`, opened by the candidate's build with the
  largest batch size the eager sweep ran): the user's model is never called, eagerly or
  traced, at a batch size the sweep did not run (one that crashes or hangs there);
- the batch axis of every input is one shared dynamic dimension named ``batch`` in
  ``[1, max_batch_size]`` (:data:`UNBOUNDED_BATCH` when the backend needs no real bound),
  never beyond the envelope (:func:`envelope_bound`: a model that branches on batch sizes
  it is never run at still exports), and static when the envelope is one row (a batch of
  one is the only size ever run);
- every dynamic dimension of the input spec is one ``torch.export.Dim`` of its name and
  range, shared by every axis that follows it (:func:`export_dims`);
- what is exported is the module's own call (:func:`spec_dynamic_shapes` keys the shapes
  by ``forward``'s parameters), once per module, input spec, dtype and batch bound, and
  shared by every backend that needs it (:mod:`._shared_export`);
- :func:`flat_inputs` maps a module call to its tensors in spec order (positional then
  keywords), and :class:`OutputLayout` rebuilds the eager output structure from the
  output leaves in pytree order (what ``torch.export`` flattens the outputs to).
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import torch
import torch.utils._pytree as pytree

from aitune_fp.effects.inputs.containers import labelled
from aitune_fp.effects.inputs.samples import Batch, InputSpec, Samples, make_batch

EXAMPLE_BATCH = 2
UNBOUNDED_BATCH = 2**20
_ENVELOPE: ContextVar[int | None] = ContextVar("aitune_fp_batch_envelope", default=None)


@contextlib.contextmanager
def batch_envelope(largest: int | None) -> Iterator[None]:
    """While open, builds call the model at no more than ``largest`` rows (``None``: no
    limit known)."""
    token = _ENVELOPE.set(largest)
    try:
        yield
    finally:
        _ENVELOPE.reset(token)


def example_rows() -> int:
    """Rows of the example batch: :data:`EXAMPLE_BATCH`, or fewer inside a smaller envelope.

    >>> example_rows()
    2
    >>> with batch_envelope(1):
    ...     example_rows()
    1
    """
    largest = _ENVELOPE.get()
    return EXAMPLE_BATCH if largest is None else max(1, min(EXAMPLE_BATCH, largest))


def envelope_bound(bound: int) -> int:
    """``bound`` for the batch dimension, lowered to the envelope (when one is open).

    >>> envelope_bound(UNBOUNDED_BATCH) == UNBOUNDED_BATCH
    True
    >>> with batch_envelope(16):
    ...     envelope_bound(UNBOUNDED_BATCH), envelope_bound(8)
    (16, 8)
    """
    largest = _ENVELOPE.get()
    return bound if largest is None else min(bound, max(largest, EXAMPLE_BATCH))


def example_batch(samples: Samples, device: torch.device) -> Batch:
    """A batch of :func:`example_rows` rows from all samples, on ``device``."""
    return make_batch(samples, example_rows()).to(device)


def batch_dim(max_batch_size: int = UNBOUNDED_BATCH) -> Any:
    """The dynamic batch dimension ``batch`` in ``[1, max_batch_size]``."""
    return torch.export.Dim("batch", min=1, max=max(max_batch_size, EXAMPLE_BATCH))


def export_dims(spec: InputSpec, max_batch_size: int = UNBOUNDED_BATCH) -> dict[str, Any]:
    """The ``Dim`` of the batch (``"batch"``) and of every dynamic dimension, by name."""
    dims = {"batch": batch_dim(max_batch_size)}
    for name, d in spec.dims().items():
        dims[name] = torch.export.Dim(name, min=d.min, max=d.max)
    return dims


def tensor_dynamic_shapes(spec: InputSpec, dims: dict[str, Any]) -> tuple[dict[int, Any], ...]:
    """``{axis: Dim}`` of every input in spec order: its batch axis (unless the example
    batch is one row: then static) and its dynamic axes."""
    batch = {spec.batch_axis: dims["batch"]} if example_rows() > 1 else {}
    return tuple({**batch, **{d.axis: dims[d.dim] for d in t.dynamic}} for t in spec.tensors)


def spec_dynamic_shapes(
    module: torch.nn.Module, spec: InputSpec, max_batch_size: int = UNBOUNDED_BATCH
) -> dict[str, Any]:
    """``torch.export`` dynamic shapes of the spec, keyed by ``forward``'s parameter names.

    Positional inputs bind to ``forward``'s parameters in order and keyword inputs by name;
    ``*args`` parameters get a tuple of per-input specs and ``**kwargs`` parameters a dict.
    """
    shapes = tensor_dynamic_shapes(spec, export_dims(spec, max_batch_size))
    n = len(spec.positional)
    bound = inspect.signature(module.forward).bind(
        *shapes[:n], **dict(zip(spec.keywords, shapes[n:], strict=True))
    )
    return dict(bound.arguments)


def flat_inputs(spec: InputSpec) -> Callable[..., tuple[torch.Tensor, ...]]:
    """A function mapping a module call ``(*args, **kwargs)`` to its tensors in spec order."""
    keywords = spec.keywords
    if not keywords:
        return lambda *args: args
    return lambda *args, **kwargs: (*args, *(kwargs[k] for k in keywords))


@dataclass(frozen=True, slots=True)
class OutputLayout:
    """The eager output structure: its pytree spec and a label for every leaf."""

    treespec: pytree.TreeSpec
    labels: tuple[str, ...]

    def rebuild(self, leaves: Sequence[Any]) -> Any:
        """The eager structure with ``leaves`` in place of its leaves."""
        return pytree.tree_unflatten(list(leaves), self.treespec)


def output_layout(outputs: Any) -> OutputLayout:
    """The layout of one eager output, refusing leaves that are not tensors.

    >>> layout = output_layout({"a": torch.zeros(1), "b": (torch.ones(1),)})
    >>> layout.labels
    ("output['a']", "output['b'][0]")
    >>> layout.rebuild([1, 2])
    {'a': 1, 'b': (2,)}
    """
    with_labels, treespec = labelled(outputs)
    labels = tuple(label for label, _ in with_labels)
    for label, leaf in with_labels:
        if not isinstance(leaf, torch.Tensor):
            raise TypeError(
                f"{label} is a {type(leaf).__name__}, not a tensor; "
                "this backend can only return tensors"
            )
    if not labels:
        raise TypeError("the module returns no tensors")
    return OutputLayout(treespec, labels)


def eager_layout(module: torch.nn.Module, batch: Batch) -> OutputLayout:
    """Run ``module`` once on ``batch`` without autograd and return its output layout."""
    with torch.inference_mode():
        return output_layout(batch.call(module))
