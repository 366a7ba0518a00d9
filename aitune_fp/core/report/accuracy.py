"""Accuracy in the report: a short cell per backend and the precision line of the decision.

Rules:
- a backend's precision comes from its stored config (:func:`precision_of_config`:
  ``int8`` for ONNX Runtime's quantized variants, ``float16`` for an ``fp16`` build,
  ``bfloat16`` for a ``bf16`` one (TensorRT, Torch-TensorRT), the
  config's ``precision`` field, else ``float32``);
- its figures are those recorded with its profile (``Profile.accuracy``); the cell shows
  the precision and the headline figures (:func:`figures_text`), ``—`` without figures;
- the speed/accuracy front follows the table (:mod:`.pareto`);
- the decision line names the winner's precision and its figures; a run with no figures
  (recorded before them) has no such line.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from aitune_fp.core.record.run_record import BackendOutcome, RunRecord
from aitune_fp.core.report.pareto import front_line

SHORT = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16", "int8": "int8"}


def precision_of_config(config: Mapping[str, Any]) -> str:
    """The precision a stored backend config computes in.

    >>> precision_of_config({"precision": "int8-dynamic"}), precision_of_config({"fp16": True})
    ('int8', 'float16')
    >>> precision_of_config({}), precision_of_config({"computes_in": "bfloat16"})
    ('float32', 'bfloat16')
    >>> precision_of_config({"fp16": False, "bf16": True})
    'bfloat16'
    """
    if "computes_in" in config:  # a backend from outside aitune_fp says it itself
        return str(config["computes_in"])
    precision = str(config.get("precision", "float32"))
    if precision.startswith("int8"):
        return "int8"
    if config.get("fp16"):
        return "float16"
    if config.get("bf16"):
        return "bfloat16"
    return precision


def figures_text(figures: Mapping[str, float]) -> str:
    """The headline figures in one phrase.

    >>> figures_text({"rms_rel_error": 0.0123, "top1_agreement": 0.995, "cosine": 0.99991})
    'rel RMS 0.0123, cosine 0.99991, top-1 99.5%'
    """
    parts = []
    if "rms_rel_error" in figures:
        parts.append(f"rel RMS {figures['rms_rel_error']:.3g}")
    if "cosine" in figures:
        parts.append(f"cosine {figures['cosine']:.5g}")
    if "top1_agreement" in figures:
        parts.append(f"top-1 {figures['top1_agreement']:.1%}")
    if "metric_candidate" in figures:
        got, eager = figures["metric_candidate"], figures.get("metric_eager", math.nan)
        parts.append(f"metric {got:.4g} (eager {eager:.4g})")
    return ", ".join(parts) or "no floating outputs"


ACCURACY_HEADER = "precision, rel RMS, top-1"


def accuracy_cell(outcome: BackendOutcome | None) -> str:
    """``int8 0.017 100%`` (precision, RMS relative error and top-1 agreement against
    eager, see :data:`ACCURACY_HEADER`) for the table, ``—`` without figures."""
    if outcome is None or outcome.profile is None or not outcome.profile.accuracy:
        return "—"
    precision = SHORT.get(precision_of_config(outcome.config), "?")
    figures = outcome.profile.accuracy
    short = [f"{precision}"]
    if "rms_rel_error" in figures:
        short.append(f"{figures['rms_rel_error']:.2g}")
    if "top1_agreement" in figures:
        short.append(f"{figures['top1_agreement']:.1%}".replace(".0%", "%"))
    return " ".join(short)


def precision_line(record: RunRecord) -> str | None:
    """``Precision: int8; against eager: rel RMS …`` for the winner; for the baseline
    selected in a run where candidates have figures, ``Precision: float32 (the baseline,
    eager: the reference)``; ``None`` otherwise (no selection, or no figures).

    >>> from aitune_fp.core.records import BackendProfilingResult, Profile, Selection
    >>> base = BackendOutcome("eager", "eager", "k", {}, profile=Profile("eager", {1: [1.0]}))
    >>> o = BackendOutcome("ort", "onnxruntime", "k", {"precision": "int8-dynamic"},
    ...     profile=Profile("ort", {1: [2.0]}, accuracy={"rms_rel_error": 0.02}))
    >>> sel = Selection("eager", BackendProfilingResult(1.0, 1, 1.0, 1.0), True)
    >>> precision_line(RunRecord("m", "cpu", {}, base, (o,), sel, None, {}, {}, None))
    'Precision: float32 (the baseline, eager: the reference)'
    """
    sel = record.selection
    if sel is None:
        return None
    if sel.fell_back_to_baseline and record.baseline is not None:
        if not _with_figures(record):
            return None
        precision = precision_of_config(record.baseline.config)
        return f"Precision: {precision} (the baseline, {record.baseline.backend}: the reference)"
    outcome = next((o for o in record.candidates if o.backend == sel.backend), None)
    if outcome is None or outcome.profile is None or not outcome.profile.accuracy:
        return None
    precision, f = precision_of_config(outcome.config), outcome.profile.accuracy
    return f"Precision: {precision}; against eager{held_out_text(f)}: {figures_text(f)}"


def held_out_text(figures: Mapping[str, float]) -> str:
    """Where the figures were taken: the held-out inputs the verdict read, and the seen
    rows' error beside them (empty for a record older than the split).

    >>> held_out_text({"held_out_rows": 12, "seen/rms_rel_error": 0.0151})
    ' on 12 held-out rows (rel RMS 0.0151 on the 12 seen rows)'
    >>> held_out_text({"held_out_rows": 4, "held_out_fresh": 1.0, "seen_rows": 2})
    ' on 4 rows drawn fresh (the 2 sample rows were too few to hold any out)'
    """
    rows = figures.get("held_out_rows")
    if rows is None:
        return ""
    seen = figures.get("seen_rows", rows)
    if figures.get("held_out_fresh"):
        why = f"the {seen:g} sample rows were too few to hold any out"
        return f" on {rows:g} rows drawn fresh ({why})"
    rms = figures.get("seen/rms_rel_error")
    beside = f" (rel RMS {rms:.3g} on the {seen:g} seen rows)" if rms is not None else ""
    return f" on {rows:g} held-out rows{beside}"


def _cell(figures: Mapping[str, float], name: str, fmt: str) -> str:
    return format(figures[name], fmt) if name in figures else "—"


def _with_figures(record: RunRecord) -> list[BackendOutcome]:
    """The outcomes whose profile carries accuracy figures, baseline first."""
    return [
        o for o in (record.baseline, *record.candidates)
        if o is not None and o.profile is not None and o.profile.accuracy
    ]  # fmt: skip


def _accuracy_row(o: BackendOutcome) -> str:
    """One backend's row of the accuracy table."""
    f = o.profile.accuracy if o.profile is not None else {}
    return (
        f"| {o.backend} | {precision_of_config(o.config)} | {_cell(f, 'rms_rel_error', '.3g')} "
        f"| {_cell(f, 'cosine', '.6g')} | {_cell(f, 'top1_agreement', '.1%')} "
        f"| {_cell(f, 'fp64_rms_rel_error', '.3g')} |"
    )


def accuracy_section(record: RunRecord) -> str | None:
    """A Markdown table: each profiled backend's precision and headline figures, then the
    speed/accuracy front (:func:`~aitune_fp.core.report.pareto.front_line`) and the
    winner's precision line; ``None`` when no backend has figures.

    >>> from aitune_fp.core.records import Profile
    >>> o = BackendOutcome("ort", "onnxruntime", "k", {"precision": "int8-dynamic"},
    ...     profile=Profile("ort", {1: [1.0]}, accuracy={"rms_rel_error": 0.02}))
    >>> r = RunRecord("m", "cpu", {}, None, (o,), None, None, {}, {}, None)
    >>> accuracy_section(r).splitlines()[2]
    '| ort | int8 | 0.02 | — | — | — |'
    """
    rows = _with_figures(record)
    if not rows:
        return None
    lines = [
        "| backend | precision | rel RMS | cosine | top-1 | rel RMS vs fp64 |",
        "|---|---|---|---|---|---|",
        *(_accuracy_row(o) for o in rows),
    ]
    after = [x for x in (front_line(record), precision_line(record)) if x]
    return "\n".join(lines) + "".join(f"\n\n{x}" for x in after)
