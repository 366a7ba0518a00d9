"""The eager-relative figures: a candidate's and eager's distance from an fp64 reference.

Rules:
- the module is run in float64 on the same batches (a deep copy); ``fp64_rms_rel_error``
  (candidate vs fp64) and ``eager_fp64_rms_rel_error`` (eager fp32 vs fp64) are RMS
  relative errors over every floating output; when the module cannot run in float64,
  eager is the reference (``fp64_reference`` 0, eager's own error 0);
- with bounds asked for (a reduced-precision candidate), the candidate's error carries its
  one-sided bounds ``fp64_rms_rel_error_lower``/``_upper``: a bootstrap over the rows
  (first axis) of every output (:func:`~aitune_fp.core.accuracy.bounds.row_bootstrap`).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.utils._pytree as pytree

from aitune_fp.core.accuracy.bounds import rms_of, row_bootstrap


def to_dtype(dtype: torch.dtype) -> Callable[[Any], Any]:
    """Casts a floating tensor to ``dtype`` (anything else passes)."""

    def cast(t: Any) -> Any:
        return t.to(dtype) if isinstance(t, torch.Tensor) and t.is_floating_point() else t

    return cast


def _leaves(outputs: Any) -> list[torch.Tensor]:
    return [t for t in pytree.tree_leaves(outputs) if isinstance(t, torch.Tensor)]


def _rms(pairs: Sequence[tuple[torch.Tensor, torch.Tensor]]) -> float:
    diff2 = sum(float(((a.double() - b.double()) ** 2).sum()) for a, b in pairs)
    ref2 = sum(float((b.double() ** 2).sum()) for _, b in pairs)
    return math.sqrt(diff2 / ref2) if ref2 > 0 else math.sqrt(diff2)


def _rows(a: torch.Tensor, b: torch.Tensor) -> list[tuple[float, float]]:
    """``(‖a − b‖², ‖b‖²)`` of each row along the first axis (one row for a scalar)."""
    d, r = a.double() - b.double(), b.double()
    rows = max(r.shape[0], 1) if r.dim() else 1
    sums = torch.stack([(d * d).reshape(rows, -1).sum(-1), (r * r).reshape(rows, -1).sum(-1)], -1)
    return [(x, y) for x, y in sums.tolist()]


def _bounded(name: str, pairs: Sequence[tuple[torch.Tensor, torch.Tensor]]) -> dict[str, float]:
    """``name``'s one-sided bounds over the rows of ``pairs`` (a row bootstrap)."""
    rows = [row for a, b in pairs for row in _rows(a, b)]
    if not rows:
        return {}
    low, high = row_bootstrap(rms_of, rows)
    return {f"{name}_lower": low, f"{name}_upper": high}


def fp64_figures(
    module: torch.nn.Module,
    calls: Sequence[tuple[Callable[[Any], Any], Any, Any]],
    bounds: bool = False,
) -> dict[str, float]:
    """The eager-relative figures; ``calls`` holds, per batch, a function calling a module
    on that batch (inputs cast by the function's argument) and the candidate's and eager's
    outputs there; with ``bounds``, the candidate's error carries its bounds."""
    got_pairs: list[tuple[torch.Tensor, torch.Tensor]] = []
    eager_pairs: list[tuple[torch.Tensor, torch.Tensor]] = []
    try:
        wide = copy.deepcopy(module).to(torch.float64)
        with torch.inference_mode():
            for call, got, eager in calls:
                truth = _leaves(call(wide))
                for g, e, t in zip(_leaves(got), _leaves(eager), truth, strict=True):
                    if t.is_floating_point():
                        got_pairs.append((g.cpu(), t.cpu()))
                        eager_pairs.append((e.cpu(), t.cpu()))
    except Exception:  # the module cannot run in float64: eager is the reference
        pairs = [(g, e) for _, a, b in calls for g, e in zip(_leaves(a), _leaves(b), strict=False)]
        floating = [(g.cpu(), e.cpu()) for g, e in pairs if e.is_floating_point()]
        return {
            **(_bounded("fp64_rms_rel_error", floating) if bounds else {}),
            "fp64_rms_rel_error": _rms(floating),
            "eager_fp64_rms_rel_error": 0.0,
            "fp64_reference": 0.0,
        }
    return {
        **(_bounded("fp64_rms_rel_error", got_pairs) if bounds else {}),
        "fp64_rms_rel_error": _rms(got_pairs),
        "eager_fp64_rms_rel_error": _rms(eager_pairs),
        "fp64_reference": 1.0,
    }
