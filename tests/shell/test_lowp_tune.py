"""An Inductor bf16 winner end to end: tuned, recorded, saved as a recipe and loaded back
computing in bf16 exactly as tuned (real bf16 on CPU)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch
from returns.unsafe import unsafe_perform_io
from torch import nn

from aitune_fp import load, min_latency, save
from aitune_fp.core.accuracy import Search
from aitune_fp.effects.backends.inductor import InductorJIT
from aitune_fp.effects.machine.capabilities import NEEDS_BF16, skip_unless
from aitune_fp.shell.tune_module import TuneOptions, TuningRun, run_tuning
from tests.shell.test_tune_module_fakes import quick


@pytest.mark.heavy
@skip_unless(NEEDS_BF16)
def test_an_inductor_bf16_winner_saves_and_loads_back_as_tuned(tmp_path: Path) -> None:
    """The pick's config keeps precision and freezing; the loaded recipe recompiles the same
    bf16 program: its outputs equal the tuned module's and differ from fp32 eager's."""
    torch.manual_seed(0)
    module = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).eval()
    samples = [torch.randn(4, 64) for _ in range(2)]
    strategy = dataclasses.replace(quick(min_latency), validate_performance=False)
    config = InductorJIT(precision="bfloat16", freezing=True)
    run: TuningRun = unsafe_perform_io(
        run_tuning(
            module,
            samples,
            strategy,
            [config],
            TuneOptions(
                cache_dir=tmp_path / "cache",
                isolation=False,
                search=Search(precisions=frozenset({"bfloat16"})),
            ),
        )
    ).unwrap()
    (outcome,) = run.record.outcomes
    assert outcome.config["precision"] == "bfloat16" and outcome.config["freezing"] is True
    assert "fp64_rms_rel_error" in outcome.validation
    tuned = run.tuned
    assert tuned is not None and tuned.backend == config.describe()
    loaded = load(save(tuned, tmp_path / "deploy"), module)
    x = torch.randn(1, 64)  # min_latency tunes batch size 1
    with torch.inference_mode():
        got, want, fp32 = loaded(x), tuned(x), module(x)
    torch.testing.assert_close(got, want)
    assert got.dtype == torch.float32 and not torch.allclose(got, fp32, rtol=1e-5, atol=1e-6)
