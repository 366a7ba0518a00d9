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
  drawn fresh from the samples' envelope, else 0);
- a reduced-precision verdict carries its confidence bounds and is taken on enough rows
  (:mod:`aitune_fp.core.accuracy.evidence`): while it is undecided, more rows are drawn
  fresh (:func:`~aitune_fp.effects.checks.held_out.extra_batches`, shaped like a batch of
  ``draw_size`` rows, a size validation checked), run through the candidate and eager
  (checked for structure and NaN/Inf like every validation batch) and added to the
  held-out part, up to the cap; ``judged_rows`` is the rows the verdict read and
  ``held_out_drawn`` how many of them were drawn so; still undecided at the cap, the
  candidate is refused with the rows it would need. Full precision draws nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

import torch

from aitune_fp.core.accuracy.claims import bounded
from aitune_fp.core.accuracy.evidence import (
    rows_wanted,
    top1_wanted,
    undecided,
    undecided_reason,
)
from aitune_fp.core.accuracy.policy import AccuracyPolicy
from aitune_fp.core.accuracy.split import RowSplit
from aitune_fp.core.report.accuracy import figures_text
from aitune_fp.effects.checks.accuracy import Seen, assess, error_figures, pairs_of, wants_fp64
from aitune_fp.effects.checks.held_out import extra_batches, judged_batches
from aitune_fp.effects.checks.output_compare import (
    Mismatch,
    check_finite,
    check_structure,
    clone_outputs,
)
from aitune_fp.effects.checks.tf32 import strict_fp32
from aitune_fp.effects.inputs.samples import Batch, Samples, make_batch

_SIZES = frozenset({"judged_rows", "held_out_drawn"})


def _prefixed(prefix: str, figures: Mapping[str, float]) -> dict[str, float]:
    """The headline figures (not the per-output ones, nor the part's sizes) under
    ``prefix/``."""
    return {f"{prefix}/{k}": v for k, v in figures.items() if "/" not in k and k not in _SIZES}


def assess_held_out(
    runner: Callable[..., Any],
    precision: Any,
    eager: torch.nn.Module,
    outputs: tuple[Samples, Mapping[str, Seen]],
    policy: AccuracyPolicy,
    device: torch.device,
    draw_size: int = 1,
) -> tuple[dict[str, float], str | None]:
    """The recorded figures of both parts and the policy's verdict on the held-out part
    (``None``: admitted; a refusal names the split and the seen part's figures beside
    it); ``outputs`` holds the samples and validation's outputs by batch name."""
    samples, by_name = outputs
    split, seen_named, held_named = judged_batches(samples)
    held = [by_name[where] for where, _ in held_named]
    held_rows = sum(b.size for _, b in held_named)
    judged = _Judged(runner, precision, eager, policy, device)
    figures, refused = judged.enough(samples, held, held_rows, draw_size)
    seen = [by_name[where] for where, _ in seen_named]
    seen_figures = error_figures(p for _, got, ref in seen for p in pairs_of(got, ref))
    recorded = _recorded(figures, seen_figures, split, held_rows)
    if refused is not None:
        drawn = figures.get("held_out_drawn", 0.0)
        more = f", {drawn:g} more drawn fresh to decide" if drawn else ""
        refused = f"{refused} ({split.describe()}{more}; seen rows: {figures_text(seen_figures)})"
    return recorded, refused


@dataclass(frozen=True, slots=True)
class _Source:
    """Where drawn rows come from: the samples' envelope, in batches like ``template``."""

    samples: Samples
    template: Batch

    def more(self, rows: int, drawn: int) -> list[tuple[str, Batch]]:
        """Batches of at least ``rows`` fresh rows, after ``drawn`` rows drawn so far."""
        return extra_batches(self.samples, self.template, rows, drawn // self.template.size)


Judge = Callable[[list[Seen], int, int], tuple[dict[str, float], str | None]]
"""Figures and verdict on held-out outputs, given the sample rows and the rows drawn."""


@dataclass(frozen=True, slots=True)
class _Judged:
    """One candidate's verdict, taken on as many held-out rows as it needs."""

    runner: Callable[..., Any]
    precision: Any
    eager: torch.nn.Module
    policy: AccuracyPolicy
    device: torch.device

    def enough(
        self, samples: Samples, held: list[Seen], rows: int, draw_size: int
    ) -> tuple[dict[str, float], str | None]:
        """The figures and verdict on ``held`` and, while undecided, rows drawn fresh:
        first on top-1 agreement alone (cheap), then on every figure."""
        p = self.precision if isinstance(self.precision, str) else None
        source = _Source(samples, make_batch(samples, draw_size).to(self.device))
        try:
            grown, drawn, _, _ = self._grow(
                source, held, (rows, 0), self._top1, partial(top1_wanted, self.policy, p)
            )
            _, _, figures, refused = self._grow(
                source, grown, (rows, drawn), self._assess, partial(rows_wanted, self.policy, p)
            )
        except Mismatch as mismatch:
            return self._assess(held, rows, 0)[0], f"on rows drawn to decide: {mismatch}"
        if undecided(self.policy, p, figures):
            refused = f"{refused}; {undecided_reason(self.policy, figures)}"
        return figures, refused

    def _grow(
        self,
        source: _Source,
        held: list[Seen],
        sizes: tuple[int, int],
        judge: Judge,
        wanted: Callable[[dict[str, float]], int],
    ) -> tuple[list[Seen], int, dict[str, float], str | None]:
        """Draw rows while ``wanted`` asks for more than are held (``sizes``: the sample
        rows and the rows drawn so far); the held outputs, rows drawn, figures, verdict."""
        rows, drawn = sizes
        figures, refused = judge(held, rows, drawn)
        while (want := wanted(figures)) > rows + drawn:
            more = source.more(want - rows - drawn, drawn)
            held = held + [self._outputs(where, b) for where, b in more]
            drawn += sum(b.size for _, b in more)
            figures, refused = judge(held, rows, drawn)
        return held, drawn, figures, refused

    def _top1(self, held: list[Seen], rows: int, drawn: int) -> tuple[dict[str, float], None]:
        """Top-1 agreement and its bounds alone (no fp64 run, no bootstrap; nothing for
        full precision)."""
        if not wants_fp64(self.precision):
            return {}, None
        pairs = (p for _, got, ref in held for p in pairs_of(got, ref))
        figures = error_figures(pairs, bounds=True, resample=False)
        return figures | {"judged_rows": float(rows + drawn)}, None

    def _assess(
        self, held: list[Seen], rows: int, drawn: int
    ) -> tuple[dict[str, float], str | None]:
        """The figures on ``held`` (with the rows judged, when bounded) and the verdict."""
        figures, refused = assess(
            self.runner, self.precision, self.eager, held, self.policy, self.device
        )
        if bounded(figures):
            figures |= {"judged_rows": float(rows + drawn), "held_out_drawn": float(drawn)}
        return figures, refused

    def _outputs(self, where: str, batch: Batch) -> Seen:
        """The candidate's and eager's outputs on a drawn batch, checked as validation
        checks its own batches (structure, shapes, dtypes, NaN/Inf)."""
        with torch.inference_mode():
            try:
                got = clone_outputs(batch.call(self.runner))
            except Exception as error:
                raise Mismatch(f"raised {where}: {type(error).__name__}: {error}") from error
            with strict_fp32():
                ref = batch.call(self.eager)
        for label, g, _ in check_structure(got, ref, where):
            if isinstance(g, torch.Tensor):
                check_finite(label, g, where)
        return batch, got, ref


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
