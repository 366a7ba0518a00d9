"""Plans that know the machine, end to end, on a machine given as a value (this one may
well have native bf16: the capabilities are injected, not read)."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Any

import pytest
import torch
from returns.unsafe import unsafe_perform_io
from torch import nn

from aitune_fp import min_latency
from aitune_fp.core.accuracy import Search
from aitune_fp.core.accuracy.reach import Capabilities
from aitune_fp.core.record.run_record import loads
from aitune_fp.effects.backends.eager import TorchEager
from aitune_fp.shell.progress import ProgressEvent
from aitune_fp.shell.tune_module import TuneOptions, TuningRun, run_tuning
from tests.shell.test_tune_module_fakes import quick

AVX2 = Capabilities("cpu", frozenset({"int8"}), frozenset({"avx2", "fma"}))
BF16 = "eager(precision='bfloat16')"


def _tune(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **options: Any) -> TuningRun:
    """A quick tune whose search generates eager in bf16 and eager at one thread."""
    generated = (TorchEager(precision="bfloat16"), TorchEager(threads=1))
    monkeypatch.setattr("aitune_fp.shell.variants.search_candidates", lambda *_: generated)
    strategy = dataclasses.replace(quick(min_latency), validate_performance=False)
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU()).eval()
    chosen = TuneOptions(cache_dir=tmp_path / "c", isolation=False, capabilities=AVX2,
                         record_path=tmp_path / "run.json", **options)  # fmt: skip
    run: TuningRun = unsafe_perform_io(
        run_tuning(model, torch.randn(4, 8), strategy, None, chosen)
    ).unwrap()
    return run


def test_a_precision_not_native_here_is_left_out_named_once_and_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a CPU without native bf16 the bf16 variant is neither built nor a failed row: one
    plan line and run.json's ``left_out`` name it with the reason."""
    said: list[ProgressEvent] = []
    run = _tune(tmp_path, monkeypatch, progress=said.append)
    assert [c.backend for c in run.record.candidates] == ["eager(threads=1)"]
    (left,) = loads((tmp_path / "run.json").read_text()).left_out
    assert (left.backend, left.precision) == (BF16, "bfloat16")
    assert "no native bfloat16" in left.reason
    plan = [e.message for e in said if e.kind == "plan" and "left out" in str(e.message)]
    assert len(plan) == 1 and BF16 in str(plan[0])


def test_a_left_out_precision_named_explicitly_is_built_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """``--precisions`` naming bf16 keeps the bf16 variant in the plan (tried, not left out)
    and warns that this machine has no native bf16."""
    named = Search(precisions=frozenset({"float32", "bfloat16"}))
    with caplog.at_level(logging.WARNING, logger="aitune_fp"):
        run = _tune(tmp_path, monkeypatch, search=named)
    assert BF16 in [c.backend for c in run.record.candidates] and run.record.left_out == ()
    assert any(BF16 in r.message and "no native bfloat16" in r.message for r in caplog.records)
