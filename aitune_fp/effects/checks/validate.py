"""Check a built backend against the eager module before it is profiled.

Rules (a violation is ``BackendFailure(backend, "validate", message)``, never an exception):
- the backend runs on every user sample and on batches of the smallest and the largest
  batch size (built from all samples with ``make_batch``); with dynamic axes, also at both
  batch sizes with every dynamic dimension at its minimum and at its maximum
  (``batch_at``), so a backend that fixed a size the user declared dynamic fails here; an
  exception while running is a failure naming the batch;
- its outputs hold no NaN or Inf;
- its output structure (tuple/list/dict nesting, dict keys) and every shape and dtype equal
  eager's on the same batch;
- every floating output is close to eager's: ``|got − eager| ≤ atol + rtol·|eager|`` with
  ``rtol``/``atol`` chosen by dtype (the looser of the output dtype and the precision the
  backend computes in, ``Built.info["precision"]``, else torch's own: :mod:`.tf32`);
  integer and bool outputs must be equal; eager's outputs are computed in strict float32
  (:func:`~aitune_fp.effects.checks.tf32.strict_fp32`), never TF32;
- a failure names the output, the batch, the worst element (index, both values) and the
  max abs/rel error; a success reports the max errors over everything checked (the rel
  error of an element is ``|got − eager| / max(|eager|, atol)``, so zeros do not blow it up);
- eager's outputs are those stored with the runner's cache entry when it has some for
  exactly these samples and batches (:func:`~aitune_fp.effects.cache.reference.
  cached_references`), else eager runs; the report says which (``reference``: ``"cached"``
  or ``"eager"``; ``as_dict()["cached_reference"]`` is 1 or 0);
- the accuracy policy's verdict and figures come from the split of the samples
  (:mod:`aitune_fp.effects.checks.held_out_verdict`): the verdict on the held-out part, the
  figures of both parts recorded; a reduced-precision verdict too few rows decide draws
  more, in batches of the largest size checked.

Longer than 260 lines: validation's steps against eager share the reference outputs and the
report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import torch
from returns.io import IOFailure, IOResult, IOSuccess

from aitune_fp.core.accuracy.policy import DEFAULT_POLICY, REDUCED, AccuracyPolicy
from aitune_fp.core.records import BackendFailure
from aitune_fp.core.report.accuracy import figures_text as summary
from aitune_fp.effects.backends.base import Built
from aitune_fp.effects.cache.reference import cached_references, validation_batches
from aitune_fp.effects.checks.accuracy import Seen
from aitune_fp.effects.checks.held_out_verdict import assess_held_out
from aitune_fp.effects.checks.output_compare import (
    Errors,
    Mismatch,
    OutputBound,
    check_finite,
    check_structure,
    clone_outputs,
    compare,
)
from aitune_fp.effects.checks.tf32 import (
    DEFAULT_SWITCHES,
    Tf32Switches,
    candidate_precision,
    strict_fp32,
)
from aitune_fp.effects.inputs.samples import Batch, Samples


@dataclass(frozen=True, slots=True)
class Tolerance:
    """Tolerances per floating dtype (TF32 compute uses ``tf32``).

    The fp32 bound admits the reordering of sums that compilers and runtimes do: inductor,
    AOTInductor and ONNX Runtime differ from eager by at most 2e-7 on the demo models on CPU,
    and GPU kernels with other reduction orders need more room. TF32 and half-precision
    bounds admit a few units of their 10-bit (fp16, TF32) or 7-bit (bf16) mantissa.

    >>> Tolerance().bound("float32", None)
    OutputBound(rtol=0.001, atol=0.0001)
    >>> Tolerance().bound("float32", "float16")
    OutputBound(rtol=0.01, atol=0.01)
    >>> Tolerance.uniform(rtol=0.0, atol=0.0).bound("bfloat16", None)
    OutputBound(rtol=0.0, atol=0.0)
    """

    float64: OutputBound = field(default=OutputBound(1e-6, 1e-7))
    float32: OutputBound = field(default=OutputBound(1e-3, 1e-4))
    tf32: OutputBound = field(default=OutputBound(5e-3, 5e-3))
    float16: OutputBound = field(default=OutputBound(1e-2, 1e-2))
    bfloat16: OutputBound = field(default=OutputBound(5e-2, 5e-2))
    policy: AccuracyPolicy = field(default=DEFAULT_POLICY)
    """Judges reduced precision in place of the bounds
    (:mod:`aitune_fp.effects.checks.accuracy`)."""

    @classmethod
    def uniform(cls, *, rtol: float, atol: float) -> Tolerance:
        """The same bound for every dtype."""
        b = OutputBound(rtol, atol)
        return cls(b, b, b, b, b)

    def bound(self, dtype: str, precision: str | None) -> OutputBound:
        """The looser of the bounds for ``dtype`` and for the compute ``precision``."""
        table = {
            "float64": self.float64,
            "float32": self.float32,
            "tf32": self.tf32,
            "float16": self.float16,
            "bfloat16": self.bfloat16,
        }
        candidates = [table[name] for name in (dtype, precision) if name in table]
        return max(candidates or [self.float32], key=lambda b: (b.rtol, b.atol))


@dataclass(frozen=True, slots=True)
class ValidationReport:
    """What validation checked and the largest errors it saw against eager."""

    backend: str
    batches: tuple[str, ...]
    max_abs_error: float
    max_rel_error: float
    worst: str
    reference: str = "eager"
    switches: Tf32Switches = DEFAULT_SWITCHES
    figures: Mapping[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, float]:
        """The numbers, for logs and stage records (``cached_reference``: 1 when eager's
        outputs came from the cache entry; the TF32 switches, :mod:`.tf32`), with the
        accuracy figures."""
        return {
            **self.figures,
            "max_abs_error": self.max_abs_error,
            "max_rel_error": self.max_rel_error,
            "batches_checked": float(len(self.batches)),
            "cached_reference": 1.0 if self.reference == "cached" else 0.0,
            **self.switches.as_record(),
        }


def _check_batch(
    built: Built,
    eager_module: torch.nn.Module,
    batch: Batch,
    where: str,
    tolerance: Tolerance,
    stored: Any = None,
    device: torch.device = torch.device("cpu"),
    seen: dict[str, Seen] | None = None,
) -> Errors:
    """Errors of one batch against eager's outputs (``stored`` ones when given); both
    outputs are kept in ``seen`` under ``where``."""
    got, ref = _outputs(built, eager_module, batch, where, stored)
    precision = candidate_precision(built.info.get("precision"), device)
    if seen is not None:
        seen[where] = (batch, got, ref)
    worst = Errors()
    for label, g, r in check_structure(got, ref, where):
        worst = worst.merge(_leaf_errors(label, where, g, r, tolerance, precision))
    return worst


def _outputs(
    built: Built, eager_module: torch.nn.Module, batch: Batch, where: str, stored: Any
) -> tuple[Any, Any]:
    """The runner's outputs (copied) and eager's (``stored``, or run in strict fp32)."""
    with torch.inference_mode():
        try:
            got = clone_outputs(batch.call(built.runner))
        except Exception as error:
            raise Mismatch(f"raised {where}: {type(error).__name__}: {error}") from error
        with strict_fp32():
            ref = stored if stored is not None else batch.call(eager_module)
    return got, ref


def _leaf_errors(
    label: str, where: str, g: Any, r: Any, tolerance: Tolerance, precision: str | None
) -> Errors:
    """Errors of one output leaf; raises :class:`Mismatch` on a broken rule. A floating
    output computed in reduced precision is left to the accuracy policy."""
    if not isinstance(r, torch.Tensor):
        if g != r:
            raise Mismatch(f"{label} {where} is {g!r}, eager {r!r}")
        return Errors()
    check_finite(label, g, where)
    floating = r.is_floating_point() or r.is_complex()
    if floating and precision in REDUCED:
        return Errors()  # judged by the accuracy policy on the figures of every batch
    dtype = str(r.dtype).removeprefix("torch.")
    bound = tolerance.bound(dtype, precision) if floating else None
    return compare(label, g, r, bound, where)


def validate(
    backend_name: str,
    built: Built,
    eager_module: torch.nn.Module,
    samples: Samples,
    device: torch.device,
    *,
    batch_sizes: Sequence[int] | None = None,
    tolerance: Tolerance = Tolerance(),
) -> IOResult[ValidationReport, BackendFailure]:
    """Compare ``built`` with ``eager_module`` on every sample and at the batch-size extremes.

    ``batch_sizes`` defaults to ``(1, rows)`` where ``rows`` is how many rows all samples
    hold; pass ``(1, max_batch_size)`` to check the largest batch the profiler will use.
    ``eager_module`` must already be on ``device`` in eval mode.
    """
    sizes = tuple(batch_sizes) if batch_sizes is not None else (1, samples.rows)
    if not sizes or min(sizes) < 1:
        raise ValueError(f"batch_sizes must be >= 1, got {sizes}")
    stored = cached_references(built, samples, sizes, device)
    seen: dict[str, Seen] = {}
    checked: list[str] = []
    worst = Errors()
    try:
        for where, batch in validation_batches(samples, sizes):
            ref = stored[where] if stored is not None else None
            b = batch.to(device)
            worst = worst.merge(
                _check_batch(built, eager_module, b, where, tolerance, ref, device, seen)
            )
            checked.append(where)
    except Mismatch as mismatch:
        return IOFailure(BackendFailure(backend_name, "validate", str(mismatch)))
    reference = "cached" if stored is not None else "eager"
    outputs = (samples, seen)
    judged = _judged(
        backend_name, built, eager_module, outputs, tolerance, device, worst, max(sizes)
    )
    return judged.map(partial(_report, backend_name, tuple(checked), reference))


def _report(
    backend_name: str,
    checked: tuple[str, ...],
    reference: str,
    judged: tuple[dict[str, float], Errors],
) -> ValidationReport:
    """The report of a validation that passed (the TF32 switches read now)."""
    figures, worst = judged
    return ValidationReport(
        backend_name,
        checked,
        worst.abs_error,
        worst.rel_error,
        worst.worst,
        reference,
        Tf32Switches.now(),
        figures,
    )


def _judged(
    backend_name: str,
    built: Built,
    eager_module: torch.nn.Module,
    outputs: tuple[Samples, Mapping[str, Seen]],
    tolerance: Tolerance,
    device: torch.device,
    worst: Errors,
    draw_size: int,
) -> IOResult[tuple[dict[str, float], Errors], BackendFailure]:
    """The accuracy figures of the seen and held-out parts and the policy's verdict on the
    held-out one (:mod:`.held_out_verdict`), from the samples and the outputs validation
    kept per batch (more rows drawn in batches of ``draw_size`` rows when the verdict
    needs them); in reduced precision the figures' errors stand in for the elementwise
    ones, which were not taken."""
    precision = candidate_precision(built.info.get("precision"), device)
    runner, policy = built.runner, tolerance.policy
    figures, refused = assess_held_out(
        runner, precision, eager_module, outputs, policy, device, draw_size
    )
    if refused is not None:
        why = f"refused by the accuracy policy ({precision}): {refused}; {summary(figures)}"
        return IOFailure(BackendFailure(backend_name, "validate", why))
    if precision in REDUCED:
        worst = Errors(
            figures.get("max_abs_error", 0.0), figures.get("max_rel_error", 0.0), summary(figures)
        )
    return IOSuccess((figures, worst))
