"""Accuracy figures of a candidate against eager (and an fp64 reference), and the verdict.

Rules:
- figures are computed per floating output (``output[0]``, ``output['logits']``, …) over
  the batches given (:mod:`.held_out_verdict`: the held-out part): ``max_abs_error``,
  ``max_rel_error`` (``|got − eager| / max(|eager|, 1e-6)``), ``rms_rel_error`` (‖got −
  eager‖ / ‖eager‖), ``cosine`` (cosine similarity of the flattened outputs) and, for
  classifier-like outputs (``(batch, classes)``: two dimensions, at least two classes, not
  named as features by :data:`FEATURE_NAMES`, e.g. ``pooler_output``), ``top1_agreement``
  (rows whose argmax equals eager's) and ``topk_agreement`` (rows whose eager top-1 is in
  the candidate's top ``k = min(5, classes)``); every other floating output (no class
  axis: hidden states, embeddings, regression) gets ``row_cosine``, the smallest cosine
  between a row of it (a vector along its last axis; the whole batch when that axis has
  one element or there is one axis) and eager's, rows whose eager norm is under 1e-3 of
  the batch's largest being skipped (no direction to keep); the plain names hold the worst
  output's value, ``<output>/<figure>`` each output's when there are several;
- a reduced-precision candidate (``bfloat16``, ``float16``, ``int8``) also gets the
  eager-relative figures (:mod:`.fp64_reference`) and its figures' one-sided bounds
  (``<figure>_lower``/``_upper``, ``top1_rows``, ``bound_confidence``): Clopper–Pearson on
  top-1 agreement, a bootstrap over rows (first axis) on RMS error and cosine;
- with a user metric, ``metric_eager`` and ``metric_candidate`` are the mean of
  ``fn(outputs, targets)`` over the labelled data (``metric_relative`` 1 when the drop is
  relative);
- the verdict is :func:`~aitune_fp.core.accuracy.judge` on these figures and nothing else.
Longer than 260 lines: the figures and the verdict that reads them share the outputs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.utils._pytree as pytree

from aitune_fp.core.accuracy.bounds import (
    CONFIDENCE,
    agreement_lower,
    agreement_upper,
    cosine_of,
    rms_of,
    row_bootstrap,
)
from aitune_fp.core.accuracy.policy import REDUCED, AccuracyPolicy, UserMetric
from aitune_fp.effects.checks.fp64_reference import fp64_figures, to_dtype

Pair = tuple[str, torch.Tensor, torch.Tensor]
"""(output label, candidate's tensor, eager's tensor) of one validation batch."""


@dataclass(slots=True)
class _Sums:
    """Running sums for one output over the validation batches."""

    diff2: float = 0.0
    ref2: float = 0.0
    got2: float = 0.0
    dot: float = 0.0
    max_abs: float = 0.0
    max_rel: float = 0.0
    rows: int = 0
    top1: int = 0
    topk: int = 0
    classifier: bool = field(default=False)
    row_cosine: float | None = None
    per_row: list[tuple[float, float, float, float]] = field(default_factory=list)
    """Per row (along the first axis): ``(diff², ref², got², got·ref)`` summed."""

    def add(self, got: torch.Tensor, ref: torch.Tensor, named_features: bool = False) -> None:
        g, r = got.detach().double().cpu(), ref.detach().double().cpu()
        if g.is_complex():
            g, r = torch.view_as_real(g), torch.view_as_real(r)
        if r.numel() == 0:
            return
        d = g - r
        self.per_row.extend(_row_sums(d, g, r))
        self.diff2 += float((d * d).sum())
        self.ref2 += float((r * r).sum())
        self.got2 += float((g * g).sum())
        self.dot += float((g * r).sum())
        self.max_abs = max(self.max_abs, float(d.abs().max()))
        self.max_rel = max(self.max_rel, float((d.abs() / r.abs().clamp_min(1e-6)).max()))
        if r.dim() == 2 and r.shape[-1] >= 2 and not got.is_complex() and not named_features:
            self._add_agreement(g, r)
        else:
            low = _row_cosine(g, r)
            self.row_cosine = low if self.row_cosine is None else min(self.row_cosine, low)

    def _add_agreement(self, g: torch.Tensor, r: torch.Tensor) -> None:
        """Count a classifier's rows where the candidate's top-1 (top-5) holds eager's top-1."""
        self.classifier = True
        k = min(5, r.shape[-1])
        want = r.argmax(-1)
        self.rows += want.numel()
        self.top1 += int((g.argmax(-1) == want).sum())
        self.topk += int((g.topk(k, -1).indices == want.unsqueeze(-1)).any(-1).sum())

    def bounds(self, resample: bool = True) -> dict[str, float]:
        """The one-sided confidence bounds of the figures
        (:mod:`aitune_fp.core.accuracy.bounds`): Clopper–Pearson on top-1 agreement and,
        with ``resample``, a row bootstrap on the RMS relative error and the cosine."""
        out: dict[str, float] = {}
        if self.classifier and self.rows:
            out["top1_agreement_lower"] = agreement_lower(self.top1, self.rows)
            out["top1_agreement_upper"] = agreement_upper(self.top1, self.rows)
            out["top1_rows"] = float(self.rows)
        if self.per_row and resample:
            low, high = row_bootstrap(rms_of, self.per_row)
            out |= {"rms_rel_error_lower": low, "rms_rel_error_upper": high}
            low, high = row_bootstrap(cosine_of, self.per_row)
            out |= {"cosine_lower": low, "cosine_upper": high}
        return out

    def figures(self) -> dict[str, float]:
        rms = math.sqrt(self.diff2 / self.ref2) if self.ref2 > 0 else math.sqrt(self.diff2)
        norm = math.sqrt(self.got2 * self.ref2)
        out = {
            "max_abs_error": self.max_abs,
            "max_rel_error": self.max_rel,
            "rms_rel_error": rms,
            "cosine": self.dot / norm if norm > 0 else (1.0 if self.diff2 == 0 else 0.0),
        }
        if self.classifier and self.rows:
            out["top1_agreement"] = self.top1 / self.rows
            out["topk_agreement"] = self.topk / self.rows
        if self.row_cosine is not None:
            out["row_cosine"] = self.row_cosine
        return out


def _row_sums(
    d: torch.Tensor, g: torch.Tensor, r: torch.Tensor
) -> list[tuple[float, float, float, float]]:
    """``(diff², ref², got², got·ref)`` of each row along the first axis (one row for a
    scalar)."""
    rows = max(r.shape[0], 1) if r.dim() else 1
    flat = [t.reshape(rows, -1) for t in (d * d, r * r, g * g, g * r)]
    sums = torch.stack([t.sum(-1) for t in flat], dim=-1)
    return [(a, b, c, e) for a, b, c, e in sums.tolist()]


def _row_cosine(g: torch.Tensor, r: torch.Tensor) -> float:
    """The smallest cosine between a row of ``g`` and of ``r`` (see the module rules).

    >>> got = torch.tensor([[1.0, 0.0], [0.0, 1e-9]])
    >>> want = torch.tensor([[1.0, 0.0], [1e-9, 0.0]])
    >>> _row_cosine(got, want), round(_row_cosine(got + torch.tensor([0.0, 1.0]), want), 4)
    (1.0, 0.7071)
    """
    width = r.shape[-1] if r.dim() >= 2 and r.shape[-1] >= 2 else r.numel()
    gs, rs = g.reshape(-1, width), r.reshape(-1, width)
    norms = rs.norm(dim=-1)
    kept = norms > 1e-3 * norms.max()
    if not bool(kept.any()):
        return 1.0 if bool(torch.equal(gs, rs)) else 0.0
    dot = (gs[kept] * rs[kept]).sum(-1)
    cos = dot / (gs[kept].norm(dim=-1) * norms[kept]).clamp_min(1e-300)
    return float(cos.min())


FEATURE_NAMES = ("pooler_output", "last_hidden_state", "hidden_states", "embeddings")
"""Output names (Hugging Face's) that say a ``(batch, n)`` output holds features, not
classes."""


def _named_features(label: str) -> bool:
    """Whether an output's label names features (see :data:`FEATURE_NAMES`).

    >>> _named_features("output['pooler_output']"), _named_features("output['logits']")
    (True, False)
    """
    return any(name in label for name in FEATURE_NAMES)


_WORST = {
    "cosine": min,
    "top1_agreement": min,
    "topk_agreement": min,
    "row_cosine": min,
    "top1_agreement_lower": min,
    "top1_agreement_upper": min,
    "cosine_lower": min,
    "cosine_upper": min,
}


def error_figures(
    pairs: Iterable[Pair], bounds: bool = False, resample: bool = True
) -> dict[str, float]:
    """The figures of the module rule over ``pairs`` (empty without floating outputs),
    with their confidence bounds when ``bounds`` (the bootstrapped ones with ``resample``).

    >>> ref = torch.tensor([[1.0, 2.0], [3.0, 0.5]])
    >>> f = error_figures([("output", ref + 0.01, ref)])
    >>> f["top1_agreement"], round(f["cosine"], 4), round(f["max_abs_error"], 3)
    (1.0, 1.0, 0.01)
    """
    sums: dict[str, _Sums] = {}
    for label, got, ref in pairs:
        if got.is_floating_point() or got.is_complex():
            sums.setdefault(label, _Sums()).add(got, ref, _named_features(label))
    per = {label: s.figures() | (s.bounds(resample) if bounds else {}) for label, s in sums.items()}
    worst: dict[str, float] = {}
    for figures in per.values():
        for name, value in figures.items():
            pick = _WORST.get(name, max)
            worst[name] = pick(worst[name], value) if name in worst else value
    if len(per) > 1:
        for label, figures in per.items():
            worst.update({f"{label}/{name}": v for name, v in figures.items()})
    return worst


def _call(fn: Callable[..., Any], inputs: Any, device: torch.device) -> Any:
    moved = pytree.tree_map(lambda t: t.to(device) if isinstance(t, torch.Tensor) else t, inputs)
    if isinstance(moved, Mapping):
        return fn(**moved)
    if isinstance(moved, tuple | list):
        return fn(*moved)
    return fn(moved)


def metric_figures(
    user: UserMetric, runner: Callable[..., Any], eager: torch.nn.Module, device: torch.device
) -> dict[str, float]:
    """``metric_eager`` and ``metric_candidate``: the mean user score over the data."""
    eager_scores, scores = [], []
    with torch.inference_mode():
        for inputs, targets in user.data:
            eager_scores.append(float(user.fn(_call(eager, inputs, device), targets)))
            scores.append(float(user.fn(_call(runner, inputs, device), targets)))
    if not scores:
        raise ValueError("the user metric's data is empty")
    return {
        "metric_eager": sum(eager_scores) / len(eager_scores),
        "metric_candidate": sum(scores) / len(scores),
        "metric_relative": 1.0 if user.relative else 0.0,
    }


def wants_fp64(precision: Any) -> bool:
    """Whether a candidate computing in ``precision`` gets the eager-relative figures."""
    return precision in REDUCED


Seen = tuple[Any, Any, Any]
"""(batch, candidate's outputs, eager's outputs) of one validation batch."""


def pairs_of(got: Any, ref: Any) -> list[Pair]:
    """``(output label, candidate leaf, eager leaf)`` of every tensor output."""
    got_leaves = pytree.tree_flatten_with_path(got)[0]
    ref_leaves = pytree.tree_leaves(ref)
    return [
        ("output" + pytree.keystr(path), g, r)
        for (path, g), r in zip(got_leaves, ref_leaves, strict=True)
        if isinstance(g, torch.Tensor) and isinstance(r, torch.Tensor)
    ]


def assess(
    runner: Callable[..., Any],
    precision: Any,
    eager: torch.nn.Module,
    seen: Sequence[Seen],
    policy: AccuracyPolicy,
    device: torch.device,
) -> tuple[dict[str, float], str | None]:
    """A candidate's figures (see the module rules) and the policy's verdict on them
    (``None``: admitted)."""
    from aitune_fp.core.accuracy.policy import judge

    bounds = wants_fp64(precision)
    figures = error_figures((p for _, got, ref in seen for p in pairs_of(got, ref)), bounds)
    if bounds:
        figures["bound_confidence"] = CONFIDENCE
        to64 = to_dtype(torch.float64)

        def caller(batch: Any) -> Callable[[Any], Any]:
            return lambda m: batch.call(
                lambda *a, **k: m(*pytree.tree_map(to64, a), **pytree.tree_map(to64, k))
            )

        figures |= fp64_figures(eager, [(caller(b), got, ref) for b, got, ref in seen], True)
    if policy.user_metric is not None:
        figures |= metric_figures(policy.user_metric, runner, eager, device)
    return figures, judge(policy, precision if isinstance(precision, str) else None, figures)


_NOT_FIGURES = frozenset({"batches_checked", "cached_reference"})


def with_figures(report: Mapping[str, float], profile: Any) -> Any:
    """``profile`` carrying the accuracy figures of its validation ``report``."""
    import dataclasses

    figures = {k: v for k, v in report.items() if k not in _NOT_FIGURES}
    return dataclasses.replace(profile, accuracy=figures)
