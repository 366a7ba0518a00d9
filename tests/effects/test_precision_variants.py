"""Reduced-precision candidates for real: ONNX Runtime int8 (dynamic, static QDQ), eager
bf16, the figures validation records and the default policy's verdicts on them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from returns.io import IOResult, IOSuccess
from returns.unsafe import unsafe_perform_io
from torch import nn

from aitune_fp.core.accuracy import AccuracyPolicy, ErrorBound, Search, metric
from aitune_fp.core.records import BackendFailure
from aitune_fp.effects.backends._lowp import low_precision, lowp_unavailable
from aitune_fp.effects.backends.base import Built
from aitune_fp.effects.backends.eager import TorchEager
from aitune_fp.effects.backends.ort import OnnxRuntime
from aitune_fp.effects.backends.search_space import narrowed, precision_of, search_candidates
from aitune_fp.effects.cache.artifact_cache import cache_key
from aitune_fp.effects.checks.validate import Tolerance, ValidationReport, validate
from aitune_fp.effects.inputs.samples import Samples, normalise_samples

CPU = torch.device("cpu")
pytest.importorskip("onnxruntime.quantization")


def _mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10)).eval()


class Outliers(nn.Module):
    """Two input channels scaled by 1e4 and ignored by the weights: per-tensor int8
    activations then round every informative value to zero (the classic outlier failure)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.first = nn.Linear(64, 64)
        self.head = nn.Linear(64, 10)
        scale = torch.ones(64)
        scale[:2] = 1e4
        self.register_buffer("scale", scale)
        with torch.no_grad():
            self.head.weight[:, :2] = 0.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Head of the scaled features."""
        return self.head(self.first(x) * self.scale)  # type: ignore[no-any-return]


def _samples() -> Samples:
    g = torch.Generator().manual_seed(1)
    return normalise_samples([torch.randn(8, 64, generator=g) for _ in range(3)])


def _checked(
    config: Any, module: nn.Module, samples: Samples, tmp: Path, tolerance: Tolerance = Tolerance()
) -> IOResult[ValidationReport, BackendFailure]:
    built: Built = unsafe_perform_io(config.build(module, samples, CPU, tmp).unwrap())
    try:
        return validate(config.describe(), built, module, samples, CPU, tolerance=tolerance)
    finally:
        built.close()


def _report(result: IOResult[ValidationReport, BackendFailure]) -> dict[str, float]:
    if not isinstance(result, IOSuccess):
        pytest.fail(unsafe_perform_io(result.failure()).message)
    value: ValidationReport = unsafe_perform_io(result.unwrap())
    return value.as_dict()


def _refusal(result: IOResult[ValidationReport, BackendFailure]) -> str:
    assert not isinstance(result, IOSuccess), "expected a refusal"
    failure: BackendFailure = unsafe_perform_io(result.failure())
    assert failure.stage == "validate"
    return failure.message


@pytest.mark.parametrize("precision", ["int8-dynamic"])
def test_onnxruntime_int8_is_admitted_by_the_eager_relative_rule_with_its_figures(
    precision: str, tmp_path: Path
) -> None:
    """A quantized MLP passes the default policy; every figure is recorded, fp64 ones too."""
    figures = _report(_checked(OnnxRuntime(precision=precision), _mlp(), _samples(), tmp_path))
    for name in ("rms_rel_error", "cosine", "top1_agreement", "topk_agreement",
                 "fp64_rms_rel_error", "eager_fp64_rms_rel_error", "max_abs_error"):  # fmt: skip
        assert name in figures, name
    assert 1e-4 < figures["rms_rel_error"] < 0.05  # really quantized, still close
    assert figures["eager_fp64_rms_rel_error"] < 1e-5 and figures["fp64_reference"] == 1.0
    assert (tmp_path / f"model.{precision}.onnx").is_file()


def test_static_int8_is_judged_on_the_rows_it_did_not_calibrate_on(tmp_path: Path) -> None:
    """Static int8 calibrated with min/max on 12 seen rows clips the other 12: close on the
    seen rows, refused on the held-out ones, and the refusal names both."""
    result = _checked(OnnxRuntime(precision="int8-static"), _mlp(), _samples(), tmp_path)
    text = _refusal(result)
    assert "12 seen rows, 12 held-out rows" in text, text
    seen = float(text.split("seen rows: rel RMS ")[1].split(",")[0])
    held = float(text.split("; rel RMS ")[-1].split(",")[0].split(" (")[0])  # its estimate
    assert seen < 0.05 < held, (seen, held)  # would pass if judged where it calibrated


def test_int8_that_activation_outliers_destroy_is_refused_by_default_and_by_a_metric(
    tmp_path: Path,
) -> None:
    """Outlier activations wreck per-tensor int8: the default policy and a user metric refuse it."""
    module, samples = Outliers().eval(), _samples()
    text = _refusal(_checked(OnnxRuntime(precision="int8-dynamic"), module, samples, tmp_path))
    assert "refused by the accuracy policy (int8)" in text and "rel RMS" in text
    with torch.no_grad():
        labelled = [(s.args[0], module(s.args[0]).argmax(-1)) for s in samples.items]

    def accuracy(outputs: torch.Tensor, targets: torch.Tensor) -> float:
        return float((outputs.argmax(-1) == targets).float().mean())

    strict_metric = AccuracyPolicy(
        eager_relative=None,
        bounds={"int8": ErrorBound(10.0)},
        user_metric=metric(accuracy, labelled, max_drop=0.01),
    )
    refused = _checked(
        OnnxRuntime(precision="int8-dynamic"),
        module,
        samples,
        tmp_path / "metric",
        Tolerance(policy=strict_metric),
    )
    assert "user metric dropped" in _refusal(refused)


def test_eager_bfloat16_is_judged_by_the_policy_on_real_bf16_compute(tmp_path: Path) -> None:
    """The cast bf16 module runs in bf16 (outputs float32) and the rule admits its error."""
    module, samples = _mlp(), _samples()
    dtypes = (torch.float32,)
    for autocast in (False, True):
        runner = low_precision(module, "bfloat16", autocast, dtypes)
        built = Built(runner, info={"precision": "bfloat16"})
        figures = _report(validate("bf16", built, module, samples, CPU))
        assert 1e-4 < figures["fp64_rms_rel_error"] < 3e-2, (autocast, figures)
        assert runner(torch.randn(2, 64)).dtype == torch.float32


def test_bfloat16_unavailable_where_the_cpu_only_emulates_it() -> None:
    """Without native bf16, the eager bf16 variant is an unavailable candidate with a reason."""
    native = torch.ops.mkldnn._is_mkldnn_bf16_supported()
    reason = TorchEager(precision="bfloat16").unavailable_reason(CPU)
    assert (reason is None) == native
    if not native:
        assert reason is not None and "emulated" in reason
    assert lowp_unavailable("float32", CPU) is None


def test_every_variant_is_its_own_cache_entry_and_calibration_is_keyed_by_samples() -> None:
    """Precision changes the key; static int8's key also follows the samples' values."""
    module, samples = _mlp(), _samples()
    other = normalise_samples([torch.zeros(8, 64)] * 3)
    keys = {p: cache_key(module, samples, OnnxRuntime(precision=p), CPU)
            for p in ("float32", "int8-dynamic", "int8-static")}  # fmt: skip
    assert len(set(keys.values())) == 3
    dynamic = OnnxRuntime(precision="int8-dynamic")
    assert cache_key(module, other, dynamic, CPU) == keys["int8-dynamic"]
    static = OnnxRuntime(precision="int8-static")
    assert cache_key(module, other, static, CPU) != keys["int8-static"]


def test_the_search_space_grows_with_its_level_and_narrows_to_precisions() -> None:
    """none ⊂ default ⊂ wide; --precision keeps only those precisions; pinned lists stay."""
    none, default, wide = (set(search_candidates(Search(level), CPU)) for level in
                           ("none", "default", "wide"))  # fmt: skip
    assert none < default < wide
    assert {precision_of(b) for b in default} == {"float32", "bfloat16", "int8"}
    only = search_candidates(Search("wide", frozenset({"int8"})), CPU)
    assert only and all(precision_of(b) == "int8" for b in only)
    pinned = (OnnxRuntime(), OnnxRuntime(precision="int8-static"))
    assert narrowed(Search(), pinned) == pinned
    assert narrowed(Search(precisions=frozenset({"float32"})), pinned) == pinned[:1]
    assert "CPU provider only" in (OnnxRuntime(provider="cuda", precision="int8-dynamic")
                                   .unavailable_reason(torch.device("cuda")) or "")  # fmt: skip
    with pytest.raises(ValueError, match="precision"):
        OnnxRuntime(precision="int4")
    with pytest.raises(ValueError, match="autocast"):
        TorchEager(autocast=True)


def test_figures_are_per_output_and_top1_only_for_batch_by_class_outputs() -> None:
    """Two outputs give per-output keys and the worst under the plain name; a 3-D output
    gets no top-1 figure; a flipped argmax row lowers the agreement."""
    from aitune_fp.effects.checks.accuracy import error_figures

    logits = torch.tensor([[2.0, 1.0], [0.0, 3.0]])
    flipped = torch.tensor([[1.0, 2.0], [0.0, 3.0]])
    hidden = torch.ones(2, 3, 4)
    f = error_figures([("output[0]", flipped, logits), ("output[1]", hidden * 1.1, hidden)])
    assert f["top1_agreement"] == 0.5 and f["output[0]/top1_agreement"] == 0.5
    assert "output[1]/top1_agreement" not in f
    assert f["rms_rel_error"] == max(f["output[0]/rms_rel_error"], f["output[1]/rms_rel_error"])
    assert f["output[1]/rms_rel_error"] == pytest.approx(0.1)
    assert f["cosine"] == min(f["output[0]/cosine"], f["output[1]/cosine"])
