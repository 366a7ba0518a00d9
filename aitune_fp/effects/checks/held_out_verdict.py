"""The accuracy verdict on inputs the tune did not calibrate on.

Rules:
- the batches of both parts (:func:`~aitune_fp.effects.checks.held_out.judged_batches`) are
  among validation's batches (:func:`~aitune_fp.effects.cache.reference.validation_batches`),
  so the candidate's and eager's outputs there were already taken and checked for
  structure, shapes, dtypes and NaN/Inf (and, on a cache hit, eager's come from the
  entry's stored reference: no eager run);
- the verdict is :func:`~aitune_fp.effects.checks.accuracy.assess` on the **held-out** part only
  (rows no calibration used, or fresh draws when the samples are too few), so a candidate
  exact on the rows it calibrated on and wrong elsewhere is refused;
- the recorded figures are the held-out ones under their plain names (what the report,
  ``within_accuracy`` and the Pareto front read), the same under ``held_out/<figure>``,
  the figures on the seen part under ``seen/<figure>`` (candidate against eager; the
  eager-relative fp64 figures are taken on the held-out part only), and the sizes:
  ``seen_rows``, ``held_out_rows`` and ``held_out_fresh`` (1 when the held-out part was
  drawn fresh from the samples' envelope, else 0).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch

from aitune_fp.core.accuracy.policy import AccuracyPolicy
from aitune_fp.core.accuracy.split import RowSplit
from aitune_fp.core.report.accuracy import figures_text
from aitune_fp.effects.checks.accuracy import Seen, assess, error_figures, pairs_of
from aitune_fp.effects.checks.held_out import judged_batches
from aitune_fp.effects.inputs.samples import Samples


def _prefixed(prefix: str, figures: Mapping[str, float]) -> dict[str, float]:
    """The headline figures (not the per-output ones) under ``prefix/``."""
    return {f"{prefix}/{k}": v for k, v in figures.items() if "/" not in k}


def assess_held_out(
    runner: Callable[..., Any],
    precision: Any,
    eager: torch.nn.Module,
    outputs: tuple[Samples, Mapping[str, Seen]],
    policy: AccuracyPolicy,
    device: torch.device,
) -> tuple[dict[str, float], str | None]:
    """The recorded figures of both parts and the policy's verdict on the held-out part
    (``None``: admitted; a refusal names the split and the seen part's figures beside
    it); ``outputs`` holds the samples and validation's outputs by batch name."""
    samples, by_name = outputs
    split, seen_named, held_named = judged_batches(samples)
    held = [by_name[where] for where, _ in held_named]
    figures, refused = assess(runner, precision, eager, held, policy, device)
    seen = [by_name[where] for where, _ in seen_named]
    seen_figures = error_figures(p for _, got, ref in seen for p in pairs_of(got, ref))
    held_rows = sum(b.size for _, b in held_named)
    recorded = _recorded(figures, seen_figures, split, held_rows)
    if refused is not None:
        refused = f"{refused} ({split.describe()}; seen rows: {figures_text(seen_figures)})"
    return recorded, refused


def _recorded(
    figures: Mapping[str, float], seen: Mapping[str, float], split: RowSplit, held_rows: int
) -> dict[str, float]:
    """The figures recorded for a held-out check: the held-out part's (plain and under
    ``held_out/``), the seen part's under ``seen/``, both parts' rows and whether the
    held-out rows were fresh."""
    return {
        **figures,
        **_prefixed("held_out", figures),
        **_prefixed("seen", seen),
        "seen_rows": float(len(split.seen)),
        "held_out_rows": float(held_rows),
        "held_out_fresh": 1.0 if split.fresh else 0.0,
    }
