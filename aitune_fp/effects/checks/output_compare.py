"""Comparing one output with eager's: structure, finiteness, exact or within a bound.

Rules (of :mod:`aitune_fp.effects.checks.validate`): a broken rule raises :class:`Mismatch` (turned
into a ``BackendFailure`` by validation, never let out); output structures (nesting, dict
keys, the classes of ``ModelOutput`` and KV caches: pytree structures flattened by
:mod:`aitune_fp.effects.inputs.containers`) and every shape and dtype must equal eager's; no NaN
or Inf; integer and bool outputs are equal, floating ones satisfy
``|got − eager| ≤ atol + rtol·|eager|``; a mismatch names the output, the batch and the
worst element; the relative error of an element is
``|got − eager| / max(|eager|, atol)``, so zeros do not blow it up.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.utils._pytree as pytree

from aitune_fp.effects.inputs.containers import flatten, labelled


@dataclass(frozen=True, slots=True)
class OutputBound:
    """One pair of tolerances: ``|got − ref| ≤ atol + rtol·|ref|``."""

    rtol: float
    atol: float

    def __post_init__(self) -> None:
        if not (self.rtol >= 0.0 and self.atol >= 0.0):
            raise ValueError(f"rtol and atol must be >= 0, got {self.rtol!r}, {self.atol!r}")


NO_FLOATS = "no floating outputs"


@dataclass(frozen=True, slots=True)
class Errors:
    """The largest errors of one comparison (``worst`` says where the abs error peaks)."""

    abs_error: float = 0.0
    rel_error: float = 0.0
    worst: str = NO_FLOATS

    def merge(self, other: Errors) -> Errors:
        """The larger errors of both; ``worst`` follows the larger abs error."""
        first = other if other.abs_error > self.abs_error or self.worst == NO_FLOATS else self
        if other.worst == NO_FLOATS:
            first = self
        return Errors(first.abs_error, max(self.rel_error, other.rel_error), first.worst)


class Mismatch(Exception):
    """A validation rule was broken (internal; turned into a failure value)."""


def check_structure(got: Any, ref: Any, where: str) -> list[tuple[str, Any, Any]]:
    """``(label, got leaf, eager leaf)`` pairs; raises :class:`Mismatch` when the nesting,
    a leaf's kind (tensor or not), a shape or a dtype differs from eager's.

    >>> import torch
    >>> [label for label, _, _ in check_structure((torch.ones(2), 1), (torch.zeros(2), 1), "")]
    ['output[0]', 'output[1]']
    >>> try:
    ...     check_structure(torch.ones(2), torch.ones(3, dtype=torch.int64), "at batch 1")
    ... except Mismatch as mismatch:
    ...     print(mismatch)
    output at batch 1 has shape (2,) torch.float32, eager (3,) torch.int64
    """
    got_leaves, got_spec = labelled(got)
    ref_leaves, ref_spec = labelled(ref)
    if got_spec != ref_spec:
        raise Mismatch(f"output structure differs from eager {where}: {got_spec} vs {ref_spec}")
    pairs = []
    for (label, g), (_, r) in zip(got_leaves, ref_leaves, strict=True):
        if isinstance(r, torch.Tensor) != isinstance(g, torch.Tensor):
            raise Mismatch(f"{label} {where} is a {type(g).__name__}, eager a {type(r).__name__}")
        if isinstance(r, torch.Tensor) and (g.shape != r.shape or g.dtype != r.dtype):
            raise Mismatch(
                f"{label} {where} has shape {tuple(g.shape)} {g.dtype}, "
                f"eager {tuple(r.shape)} {r.dtype}"
            )
        pairs.append((label, g, r))
    return pairs


def check_finite(label: str, got: torch.Tensor, where: str) -> None:
    """Raise :class:`Mismatch` when a floating output holds NaN or Inf (others pass).

    >>> import torch
    >>> check_finite("out", torch.tensor([1.0, float("nan"), float("inf")]), "at batch 2")
    Traceback (most recent call last):
    ...
    aitune_fp.effects.checks.output_compare.Mismatch: out at batch 2 has 1 NaN and 1 Inf values
    >>> check_finite("out", torch.tensor([1, 2]), "at batch 2") is None
    True
    """
    if not (got.is_floating_point() or got.is_complex()):
        return
    nan = int(torch.isnan(got).sum())
    inf = int(torch.isinf(got).sum())
    if nan or inf:
        raise Mismatch(f"{label} {where} has {nan} NaN and {inf} Inf values")


def unravel(flat_index: int, shape: Sequence[int]) -> tuple[int, ...]:
    """The index in ``shape`` of the ``flat_index``-th element in row-major order.

    >>> unravel(5, (2, 3)), unravel(0, (4,)), unravel(7, (2, 2, 2))
    ((1, 2), (0,), (1, 1, 1))
    """
    index = []
    for d in reversed(shape):
        index.append(flat_index % d)
        flat_index //= d
    return tuple(reversed(index))


def compare(
    label: str, got: torch.Tensor, ref: torch.Tensor, bound: OutputBound | None, where: str
) -> Errors:
    """Errors of one output; raises :class:`Mismatch` when it is out of tolerance
    (``bound=None``: the values must be equal).

    >>> import torch
    >>> got, eager = torch.tensor([1.0, 2.001]), torch.tensor([1.0, 2.0])
    >>> errors = compare("out", got, eager, OutputBound(rtol=1e-3, atol=1e-4), "at batch 1")
    >>> round(errors.abs_error, 6), round(errors.rel_error, 6), errors.worst
    (0.001, 0.0005, 'out at batch 1 at index (1,): got 2.001, eager 2')
    >>> compare("out", got, eager, OutputBound(rtol=1e-4, atol=1e-4), "at batch 1")
    Traceback (most recent call last):
    ...
    aitune_fp.effects.checks.output_compare.Mismatch: out at batch 1 is not close to ...
    >>> compare("out", torch.tensor([1, 3]), torch.tensor([1, 2]), None, "at batch 1")
    Traceback (most recent call last):
    ...
    aitune_fp.effects.checks.output_compare.Mismatch: out at batch 1: 1 of 2 values ...
    """
    if bound is None:
        wrong = int((got != ref).sum())
        if wrong:
            raise Mismatch(f"{label} {where}: {wrong} of {ref.numel()} values differ from eager")
        return Errors()
    if ref.numel() == 0:
        return Errors()
    if ref.is_complex():
        got, ref = torch.view_as_real(got), torch.view_as_real(ref)
    g, r = got.detach().double(), ref.detach().double()
    diff = (g - r).abs()
    allowed = bound.atol + bound.rtol * r.abs()
    errors = _peak_errors(f"{label} {where}", g, r, diff, bound)
    bad = int((diff > allowed).sum())
    if bad:
        excess_at = int((diff - allowed).argmax())
        raise Mismatch(_out_of_tolerance(f"{label} {where}", bad, errors, bound, g, r, excess_at))
    return errors


def _peak_errors(
    what: str, g: torch.Tensor, r: torch.Tensor, diff: torch.Tensor, bound: OutputBound
) -> Errors:
    """The largest abs and rel errors of ``what``, and where the abs error peaks."""
    rel = diff / r.abs().clamp_min(max(bound.atol, 1e-12))
    at = int(diff.argmax())
    return Errors(
        float(diff.max()),
        float(rel.max()),
        f"{what} at index {unravel(at, r.shape)}: got {g.flatten()[at].item():.6g}, "
        f"eager {r.flatten()[at].item():.6g}",
    )


def _out_of_tolerance(
    what: str,
    bad: int,
    errors: Errors,
    bound: OutputBound,
    g: torch.Tensor,
    r: torch.Tensor,
    at: int,
) -> str:
    """The mismatch line of an output with ``bad`` values out of tolerance, worst at ``at``."""
    return (
        f"{what} is not close to eager: {bad} of {r.numel()} values out of "
        f"tolerance (rtol {bound.rtol:g}, atol {bound.atol:g}); max abs error "
        f"{errors.abs_error:.3g}, max rel error {errors.rel_error:.3g}; worst at index "
        f"{unravel(at, r.shape)}: got {g.flatten()[at].item():.6g}, "
        f"eager {r.flatten()[at].item():.6g}"
    )


def clone_outputs(outputs: Any) -> Any:
    """Copies of tensor outputs (a runner may reuse its output buffers on the next call).

    >>> import torch
    >>> out = {"y": torch.ones(2), "n": 3}
    >>> copy = clone_outputs(out)
    >>> copy["y"] is out["y"], bool(torch.equal(copy["y"], out["y"])), copy["n"]
    (False, True, 3)
    """
    leaves, spec = flatten(outputs)
    return pytree.tree_unflatten(
        [t.clone() if isinstance(t, torch.Tensor) else t for t in leaves], spec
    )
