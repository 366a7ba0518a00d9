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

from aitune_fp.core.accuracy.claims import BOUNDED, bounded, claim_text
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
    """The headline figures in one phrase; a figure with a confidence bound shows the
    bound the verdict read beside its estimate, top-1 agreement as its claim.

    >>> figures_text({"rms_rel_error": 0.0123, "top1_agreement": 0.995, "cosine": 0.99991})
    'rel RMS 0.0123, cosine 0.99991, top-1 99.5%'
    >>> figures_text({"rms_rel_error": 0.0123, "rms_rel_error_upper": 0.0141,
    ...     "top1_agreement": 1.0, "top1_agreement_lower": 0.9950, "bound_confidence": 0.95})
    'rel RMS 0.0123 (≤ 0.0141 at 95%), top-1 ≥ 99.5% (95% bound; 100.0% observed)'
    """
    parts = []
    if "rms_rel_error" in figures:
        rms = figures["rms_rel_error"]
        parts.append(f"rel RMS {rms:.3g}{_beside(figures, 'rms_rel_error', '.3g')}")
    if "cosine" in figures:
        parts.append(f"cosine {figures['cosine']:.5g}{_beside(figures, 'cosine', '.5g')}")
    if "top1_agreement" in figures:
        claim = claim_text(figures, "top1_agreement", ".1%")
        seen = f"; {figures['top1_agreement']:.1%} observed)" if bounded(figures) else ""
        parts.append(f"top-1 {claim[:-1] + seen if seen else claim}")
    if "metric_candidate" in figures:
        got, eager = figures["metric_candidate"], figures.get("metric_eager", math.nan)
        parts.append(f"metric {got:.4g} (eager {eager:.4g})")
    return ", ".join(parts) or "no floating outputs"


def _beside(figures: Mapping[str, float], name: str, fmt: str) -> str:
    """`` (≤ 0.0141 at 95%)``: the bound the verdict read, empty without one."""
    side = BOUNDED[name]
    bound = figures.get(f"{name}_{side}")
    if bound is None:
        return ""
    level = figures.get("bound_confidence", 0.95)
    return f" ({'≥' if side == 'lower' else '≤'} {bound:{fmt}} at {level:.0%})"


ACCURACY_HEADER = "precision, rel RMS, top-1"


def accuracy_cell(outcome: BackendOutcome | None) -> str:
    """``int8 0.017 100%`` (precision, RMS relative error and top-1 agreement against
    eager, see :data:`ACCURACY_HEADER`) for the table, ``—`` without figures; a bounded
    top-1 shows its lower bound and the rows it rests on (``≥99.1%/600``)."""
    if outcome is None or outcome.profile is None or not outcome.profile.accuracy:
        return "—"
    precision = SHORT.get(precision_of_config(outcome.config), "?")
    figures = outcome.profile.accuracy
    short = [f"{precision}"]
    if "rms_rel_error" in figures:
        short.append(f"{figures['rms_rel_error']:.2g}")
    if "top1_agreement_lower" in figures:
        rows = figures.get("judged_rows", figures.get("top1_rows", math.nan))
        short.append(f"≥{figures['top1_agreement_lower']:.1%}/{rows:g}".replace(".0%", "%"))
    elif "top1_agreement" in figures:
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
    >>> held_out_text({"held_out_rows": 8, "judged_rows": 600, "held_out_drawn": 592})
    ' on 600 held-out rows (8 from the samples, 592 drawn fresh to decide)'
    """
    rows = figures.get("held_out_rows")
    if rows is None:
        return ""
    seen, drawn = figures.get("seen_rows", rows), figures.get("held_out_drawn", 0.0)
    judged = figures.get("judged_rows", rows)
    if figures.get("held_out_fresh"):
        why = f"the {seen:g} sample rows were too few to hold any out"
        return f" on {judged:g} rows drawn fresh ({why})"
    rms = figures.get("seen/rms_rel_error")
    notes = [f"{rows:g} from the samples, {drawn:g} drawn fresh to decide"] if drawn else []
    if rms is not None:
        notes.append(f"rel RMS {rms:.3g} on the {seen:g} seen rows")
    return f" on {judged:g} held-out rows" + (f" ({'; '.join(notes)})" if notes else "")


def _cell(figures: Mapping[str, float], name: str, fmt: str) -> str:
    return format(figures[name], fmt) if name in figures else "—"


def _top1_cell(figures: Mapping[str, float]) -> str:
    """The table's top-1 cell: the claim and, when bounded, the rows it rests on.

    >>> _top1_cell({"top1_agreement": 1.0, "top1_agreement_lower": 0.995,
    ...             "bound_confidence": 0.95, "judged_rows": 600.0})
    '≥ 99.5% (95% bound) on 600 rows'
    """
    if "top1_agreement" not in figures:
        return "—"
    claim = claim_text(figures, "top1_agreement", ".1%")
    rows = figures.get("judged_rows")
    return f"{claim} on {rows:g} rows" if bounded(figures) and rows is not None else claim


def _with_figures(record: RunRecord) -> list[BackendOutcome]:
    """The outcomes whose profile carries accuracy figures, baseline first."""
    return [
        o
        for o in (record.baseline, *record.candidates)
        if o is not None and o.profile is not None and o.profile.accuracy
    ]


def _accuracy_row(o: BackendOutcome) -> str:
    """One backend's row of the accuracy table."""
    f = o.profile.accuracy if o.profile is not None else {}
    return (
        f"| {o.backend} | {precision_of_config(o.config)} | {_cell(f, 'rms_rel_error', '.3g')} "
        f"| {_cell(f, 'cosine', '.6g')} | {_top1_cell(f)} "
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
