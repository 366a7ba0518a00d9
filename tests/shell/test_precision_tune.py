"""A reduced-precision winner end to end: tuned, recorded, saved and loaded as tuned."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch
from returns.unsafe import unsafe_perform_io
from torch import nn

from aitune_fp import load, min_latency, save
from aitune_fp.core.accuracy import Search
from aitune_fp.effects.backends.ort import OnnxRuntime
from aitune_fp.shell.tune_module import TuneOptions, TuningRun, run_tuning
from tests.shell.test_tune_module_fakes import quick

pytest.importorskip("onnxruntime.quantization")


@pytest.mark.heavy
def test_an_int8_winner_is_recorded_with_its_figures_and_loads_back_as_tuned(
    tmp_path: Path,
) -> None:
    """The int8 pick's figures are in run.json; the saved artifact is the quantized model and
    the loaded module returns exactly what the tuned one does."""
    torch.manual_seed(0)
    module = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).eval()
    with torch.no_grad():  # clear margins: int8 keeps top-1 on 99 % of unseen rows, and
        module[2].bias[0] += 1.0  # its 95 % bound shows it (the bare MLP keeps ~98.5 %)
    samples = [torch.randn(4, 64) for _ in range(2)]
    strategy = dataclasses.replace(quick(min_latency), validate_performance=False)
    run: TuningRun = unsafe_perform_io(
        run_tuning(
            module,
            samples,
            strategy,
            [OnnxRuntime(precision="int8-dynamic")],
            TuneOptions(
                cache_dir=tmp_path / "cache",
                isolation=False,
                search=Search(precisions=frozenset({"int8"})),
            ),
        )
    ).unwrap()
    (outcome,) = run.record.outcomes
    assert outcome.config["precision"] == "int8-dynamic"
    assert outcome.profile is not None and "fp64_rms_rel_error" in outcome.profile.accuracy
    assert "fp64_rms_rel_error" in outcome.validation
    tuned = run.tuned
    assert tuned is not None and tuned.backend == outcome.backend
    folder = save(tuned, tmp_path / "deploy")
    assert any(p.name.endswith("int8-dynamic.onnx") for p in folder.iterdir())
    loaded = load(folder)
    x = torch.randn(1, 64)  # min_latency tunes batch size 1
    assert torch.equal(loaded(x), tuned(x))


def test_the_search_generates_candidates_only_when_none_are_pinned() -> None:
    """No backends: the search's space; a pinned list: narrowed, never widened; a policy
    given replaces the tolerance's default one."""
    from aitune_fp.core.accuracy import AccuracyPolicy
    from aitune_fp.effects.checks.validate import Tolerance
    from aitune_fp.shell.variants import resolve_candidates, with_policy

    cpu = torch.device("cpu")
    default = [b.describe() for b in resolve_candidates(None, None, cpu)]
    assert "onnxruntime(precision='int8-dynamic')" in default
    assert [b.describe() for b in resolve_candidates(None, "none", cpu)] == [
        "inductor", "aot_inductor", "onnxruntime", "openvino",
    ]  # fmt: skip
    assert [b.describe() for b in resolve_candidates(["onnxruntime"], "wide", cpu)] == [
        "onnxruntime"
    ]
    assert resolve_candidates(["onnxruntime"], Search(precisions=frozenset({"int8"})), cpu) == ()
    policy = AccuracyPolicy(min_top1=0.9)
    assert with_policy(None, policy).policy is policy
    assert with_policy(Tolerance(), None) == Tolerance()
