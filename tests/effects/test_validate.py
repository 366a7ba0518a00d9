"""Validation against eager: structure, shapes, finiteness, closeness, both batch extremes.

The runners here are plain functions around the eager module (fakes, not compiled
backends), so every rule is checked fast and deterministically.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from returns.io import IOResult, IOSuccess
from returns.unsafe import unsafe_perform_io
from torch import nn

from aitune_fp.core.accuracy import AccuracyPolicy, ErrorBound
from aitune_fp.core.records import BackendFailure
from aitune_fp.effects.backends.base import Built
from aitune_fp.effects.checks.output_compare import OutputBound
from aitune_fp.effects.checks.validate import Tolerance, ValidationReport, validate
from aitune_fp.effects.inputs.samples import Samples, normalise_samples

CPU = torch.device("cpu")


def run(
    module: nn.Module,
    samples: Samples,
    runner: Callable[..., Any],
    *,
    info: dict[str, Any] | None = None,
    tolerance: Tolerance = Tolerance(),
    batch_sizes: tuple[int, ...] = (1, 8),
) -> IOResult[ValidationReport, BackendFailure]:
    """Validate ``runner`` against ``module``."""
    built = Built(runner, info=info or {})
    return validate(
        "fake", built, module, samples, CPU, batch_sizes=batch_sizes, tolerance=tolerance
    )


def message(result: IOResult[ValidationReport, BackendFailure]) -> str:
    """The failure message (the test fails if validation passed)."""
    assert not isinstance(result, IOSuccess), f"expected a failure, got {result}"
    failure: BackendFailure = unsafe_perform_io(result.failure())
    assert failure.stage == "validate"
    assert failure.backend == "fake"
    return failure.message


def report(result: IOResult[ValidationReport, BackendFailure]) -> ValidationReport:
    """The success report (the test fails with the message otherwise)."""
    if not isinstance(result, IOSuccess):
        pytest.fail(unsafe_perform_io(result.failure()).message)
    value: ValidationReport = unsafe_perform_io(result.unwrap())
    return value


def test_eager_itself_passes_with_zero_error(mlp: nn.Module, mlp_samples: Samples) -> None:
    """The module validated against itself passes, checks every sample, both batch sizes
    and the parts of sample 1 (the others are wholly seen or held out) the accuracy
    verdict reads."""
    r = report(run(mlp, mlp_samples, mlp))
    assert r.max_abs_error == 0.0
    assert r.batches == (
        "on sample 0",
        "on sample 1",
        "on sample 2",
        "at batch size 1",
        "at batch size 8",
        "on sample 1's seen rows",  # rows 0 and 2 are seen, 1 and 3 held out
        "on sample 1's held-out rows",
    )
    assert r.as_dict()["batches_checked"] == 7.0


def test_default_batch_sizes_are_one_and_all_rows(mlp: nn.Module, mlp_samples: Samples) -> None:
    """Without batch sizes, validation runs at 1 and at the number of rows of all samples."""
    result = validate("fake", Built(mlp), mlp, mlp_samples, CPU)
    assert report(result).batches[3:5] == ("at batch size 1", "at batch size 4")


def test_perturbed_outputs_fail_with_the_max_error(mlp: nn.Module, mlp_samples: Samples) -> None:
    """Outputs shifted by 0.05 fail, and the message names the max abs error and the place."""
    text = message(run(mlp, mlp_samples, lambda x: mlp(x) + 0.05))
    assert "output on sample 0 is not close to eager" in text
    assert "max abs error 0.05" in text
    assert "worst at index (0," in text
    assert "rtol 0.001, atol 0.0001" in text


def test_small_perturbation_passes_and_is_reported(mlp: nn.Module, mlp_samples: Samples) -> None:
    """A shift inside the tolerance passes and the report's max abs error is that shift."""
    r = report(run(mlp, mlp_samples, lambda x: mlp(x) + 5e-5))
    assert r.max_abs_error == pytest.approx(5e-5, rel=1e-3)
    assert r.max_rel_error > 0.0
    assert "output" in r.worst


def test_nan_outputs_fail(mlp: nn.Module, mlp_samples: Samples) -> None:
    """A NaN in the outputs fails validation, counted in the message."""

    def with_nan(x: torch.Tensor) -> torch.Tensor:
        out = mlp(x).clone()
        out[0, 0] = float("nan")
        return out

    assert "has 1 NaN and 0 Inf values" in message(run(mlp, mlp_samples, with_nan))


def test_inf_outputs_fail(mlp: nn.Module, mlp_samples: Samples) -> None:
    """An Inf in the outputs fails validation."""
    text = message(run(mlp, mlp_samples, lambda x: mlp(x) / 0.0))
    assert "Inf values" in text


def test_wrong_structure_fails(mlp: nn.Module, mlp_samples: Samples) -> None:
    """A tuple where eager returns a tensor fails as a structure mismatch."""
    assert "output structure differs" in message(run(mlp, mlp_samples, lambda x: (mlp(x),)))


def test_wrong_dict_keys_fail(structured_module: nn.Module, structured_samples: Samples) -> None:
    """A dict output with a renamed key fails as a structure mismatch."""

    def renamed(x: torch.Tensor, y: torch.Tensor) -> Any:
        h, d = structured_module(x, y)
        return h, {"sum": d["total"], "argmax": d["argmax"]}

    text = message(run(structured_module, structured_samples, renamed))
    assert "output structure differs" in text


def test_shape_checked_at_the_largest_batch(mlp: nn.Module, mlp_samples: Samples) -> None:
    """A runner that truncates batches above 4 rows passes the samples but fails at batch 8."""
    text = message(run(mlp, mlp_samples, lambda x: mlp(x)[:4]))
    assert (
        text == "output at batch size 8 has shape (4, 3) torch.float32, eager (8, 3) torch.float32"
    )


def test_dtype_mismatch_fails(mlp: nn.Module, mlp_samples: Samples) -> None:
    """Outputs in another dtype than eager's fail, naming both dtypes."""
    assert "torch.float64" in message(run(mlp, mlp_samples, lambda x: mlp(x).double()))


def test_runner_raising_at_one_batch_size_fails(mlp: nn.Module, mlp_samples: Samples) -> None:
    """An exception at the largest batch is a failure value naming that batch, not a raise."""

    def small_only(x: torch.Tensor) -> torch.Tensor:
        if x.shape[0] > 4:
            raise RuntimeError("batch too large for this engine")
        return mlp(x)  # type: ignore[no-any-return]

    text = message(run(mlp, mlp_samples, small_only))
    assert text == "raised at batch size 8: RuntimeError: batch too large for this engine"


def test_integer_outputs_must_be_equal(
    structured_module: nn.Module, structured_samples: Samples
) -> None:
    """An integer output off by one fails even though float tolerances would admit it."""

    def off_by_one(x: torch.Tensor, y: torch.Tensor) -> Any:
        h, d = structured_module(x, y)
        return h, {"total": d["total"], "argmax": d["argmax"] + 1}

    text = message(run(structured_module, structured_samples, off_by_one))
    assert text == "output[1]['argmax'] on sample 0: 1 of 1 values differ from eager"


def test_structured_outputs_pass(structured_module: nn.Module, structured_samples: Samples) -> None:
    """Nested tuple/dict outputs equal to eager pass and name the worst leaf by its path."""
    r = report(run(structured_module, structured_samples, structured_module))
    assert r.max_abs_error == 0.0
    assert r.worst.startswith("output[")


def test_half_precision_backends_are_judged_by_the_accuracy_policy(
    mlp: nn.Module, mlp_samples: Samples
) -> None:
    """A 3e-3 shift fails fp32 elementwise; for fp16 compute the policy decides: beyond the
    eager-relative rule's floor it is refused, and an explicit fp16 bound admits it."""
    shifted = lambda x: mlp(x) + 3e-3  # noqa: E731
    assert "not close" in message(run(mlp, mlp_samples, shifted))
    half = {"precision": "float16"}
    assert "accuracy policy (float16)" in message(run(mlp, mlp_samples, shifted, info=half))
    bound = Tolerance(policy=AccuracyPolicy(bounds={"float16": ErrorBound(0.05)}))
    r = report(run(mlp, mlp_samples, shifted, info=half, tolerance=bound))
    assert r.figures["rms_rel_error"] > 1e-3 and r.figures["top1_agreement"] == 1.0


def test_tolerance_is_configurable(mlp: nn.Module, mlp_samples: Samples) -> None:
    """A looser uniform tolerance admits what the default refuses, a zero one refuses 1e-7."""
    report(
        run(
            mlp, mlp_samples, lambda x: mlp(x) + 0.05, tolerance=Tolerance.uniform(rtol=0, atol=0.1)
        )
    )
    exact = Tolerance.uniform(rtol=0.0, atol=0.0)
    assert "not close" in message(run(mlp, mlp_samples, lambda x: mlp(x) + 1e-7, tolerance=exact))


def test_bounds_refuse_negative_values() -> None:
    """A negative tolerance is refused at construction."""
    with pytest.raises(ValueError, match="must be >= 0"):
        OutputBound(rtol=-1.0, atol=0.0)


def test_batch_sizes_must_be_positive(mlp: nn.Module, mlp_samples: Samples) -> None:
    """A batch size below 1 is an argument error, raised before anything runs."""
    with pytest.raises(ValueError, match="batch_sizes must be >= 1"):
        run(mlp, mlp_samples, mlp, batch_sizes=(0, 4))


@settings(max_examples=60, deadline=None)
@given(
    ref=st.floats(-100.0, 100.0, allow_subnormal=False),
    delta=st.floats(-1.0, 1.0, allow_subnormal=False),
)
def test_verdict_matches_the_isclose_rule(ref: float, delta: float) -> None:
    """Validation passes exactly when |got − eager| ≤ atol + rtol·|eager| (in float64)."""
    samples = normalise_samples(torch.tensor([[ref]], dtype=torch.float64))
    module = nn.Identity()
    got = torch.tensor([[ref]], dtype=torch.float64) + delta
    result = run(module, samples, lambda x: got.expand_as(x).clone(), batch_sizes=(1,))
    bound = Tolerance().float64
    expected = abs(float(got) - ref) <= bound.atol + bound.rtol * abs(ref)
    assert isinstance(result, IOSuccess) == expected
