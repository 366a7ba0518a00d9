"""End to end on CPU: every embedded model, every strategy, every CPU backend, for real.

These build real compiled backends (TorchInductor JIT and AOT, ONNX Runtime), so they are
marked heavy: CI runs them; `bash scripts/test.sh -m "not heavy"` skips them locally.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import torch
from returns.unsafe import unsafe_perform_io

from aitune_fp import Strategy, latency_budget, max_throughput, min_latency
from aitune_fp.core.measure.stop_rules import fixed_steps
from aitune_fp.models import DEMO_MODELS
from aitune_fp.shell.tune_module import TuneOptions, TuningRun, run_tuning

pytestmark = pytest.mark.heavy
CPU_BACKENDS = ("inductor", "aot_inductor", "onnxruntime")


def short(strategy: Strategy) -> Strategy:
    """The strategy with a shorter per-batch plan (same rule otherwise)."""
    plan = dataclasses.replace(
        strategy.plan, call_rule=fixed_steps(warmup=3, steps=8), max_batch_size=8
    )
    return dataclasses.replace(strategy, plan=plan)


def _call(module: Any, sample: Any) -> Any:
    return module(**sample) if isinstance(sample, dict) else module(sample)


def _assert_close(got: Any, want: Any) -> None:
    if isinstance(want, dict):
        assert set(got) == set(want)
        for k in want:
            torch.testing.assert_close(got[k], want[k], rtol=1e-3, atol=1e-3)
    else:
        torch.testing.assert_close(got, want, rtol=1e-3, atol=1e-3)


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache dir for the whole module, so repeated builds can reuse artifacts."""
    return tmp_path_factory.mktemp("cache")


@pytest.mark.parametrize("model", sorted(DEMO_MODELS))
@pytest.mark.parametrize(
    "strategy",
    [max_throughput, min_latency, latency_budget(50.0)],
    ids=["max_throughput", "min_latency", "latency_budget"],
)
def test_every_cpu_backend_competes_and_the_winner_matches_eager(
    model: str, strategy: Strategy, cache: Path
) -> None:
    """Each CPU backend is built, validated and profiled for real; the winner matches eager."""
    demo = DEMO_MODELS[model]
    module = demo.build()
    samples = demo.samples()
    io = run_tuning(
        module,
        samples,
        short(strategy),
        list(CPU_BACKENDS),
        TuneOptions(cache_dir=cache, model_name=model),
    )
    run: TuningRun = unsafe_perform_io(io).unwrap()
    record = run.record
    statuses = {c.kind: c.failure for c in record.candidates}
    assert set(statuses) == set(CPU_BACKENDS)
    assert all(f is None for f in statuses.values()), statuses
    assert run.tuned is not None
    with torch.inference_mode():
        for sample in samples:
            _assert_close(_call(run.tuned, sample), _call(module, sample))
