"""Samples as users hold them, checked with fake backends: items, dynamic axes, envelope."""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
from returns.io import IOResult, IOSuccess
from returns.unsafe import unsafe_perform_io
from torch import nn

from aitune_fp import ProfilingPlan, TuneError, max_throughput
from aitune_fp.core.measure.stop_rules import fixed_steps
from aitune_fp.core.records import BackendFailure
from aitune_fp.effects.backends.base import Built, ConfigIdentity
from aitune_fp.effects.inputs.samples import Samples
from aitune_fp.shell.tune_module import TuneOptions, run_tuning, tune_module
from aitune_fp.shell.tuned_module import (
    OutsideEnvelopeError,
    OutsideEnvelopeWarning,
    TunedModule,
)
from tests.shell.fakes import FakeBackend

QUICK = dataclasses.replace(
    max_throughput,
    plan=ProfilingPlan(call_rule=fixed_steps(warmup=1, steps=3)),
    validate_performance=False,  # the fake is selected, so its envelope is what is checked
)


class Pooled(nn.Module):
    """Mean over a sequence axis, then a linear layer: runs at any length."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.lin = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(batch, length, 4) -> (batch, 2)."""
        return self.lin(x.mean(dim=1))


@dataclasses.dataclass(frozen=True, slots=True)
class StaticLength(ConfigIdentity):
    """A backend fixed to the first sample's length, as a static export would be."""

    name: str = dataclasses.field(default="static", init=False)

    def unavailable_reason(self, device: torch.device) -> str | None:
        """Always available."""
        return None

    def build(
        self, module: nn.Module, samples: Samples, device: torch.device, work_dir: Path
    ) -> IOResult[Built, BackendFailure]:
        """A runner refusing any other length than sample 0's."""
        length = samples.items[0].args[0].shape[1]

        def runner(x: torch.Tensor) -> Any:
            if x.shape[1] != length:
                raise RuntimeError(f"static build: length {x.shape[1]} != {length}")
            return module(x)

        return IOSuccess(Built(runner))


def _mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(256, 16), nn.ReLU(), nn.Linear(16, 4)).eval()


def _items() -> list[torch.Tensor]:
    return [torch.randn(256) for _ in range(8)]


def test_unbatched_items_tune_with_the_option(tmp_path: Path) -> None:
    """Eight un-batched MLP items tune with batched=False and the result matches eager."""
    module = _mlp()
    effect = tune_module(
        module, _items(), QUICK, [FakeBackend("good")], cache_dir=tmp_path, batched=False
    )
    tuned = unsafe_perform_io(effect).unwrap()
    x = torch.stack(_items()[:3])
    torch.testing.assert_close(tuned(x), module(x))


def test_unbatched_items_without_the_option_name_the_shape_problem(tmp_path: Path) -> None:
    """Without the option the tune is a TuneError naming shapes and the fix, built nothing."""
    effect = tune_module(_mlp(), _items(), QUICK, [FakeBackend("good")], cache_dir=tmp_path)
    error: TuneError = unsafe_perform_io(effect).failure()
    assert "no correct backend found" not in error.message
    for part in ("input_0 (1,) float32", "sample 0: input_0 (256,)", "batched=False"):
        assert part in error.message
    assert "mat1 and mat2" in error.message  # the module's own error
    assert not list(tmp_path.glob("fake-*"))


def _tuned(tmp_path: Path, **options: Any) -> TunedModule:
    module = _mlp()
    samples = [torch.randn(2, 256) for _ in range(3)]
    backends = [FakeBackend("capped", raise_above=4)]
    effect = tune_module(
        module, samples, QUICK, backends, cache_dir=tmp_path, max_batch_size=4, **options
    )
    return unsafe_perform_io(effect).unwrap()


def test_a_larger_batch_runs_eager_and_warns_once(tmp_path: Path) -> None:
    """A batch above the tuned maximum runs the eager module (not the backend), warning once."""
    tuned = _tuned(tmp_path)
    x = torch.randn(6, 256)
    with pytest.warns(OutsideEnvelopeWarning, match=r"axis 0 is 6, outside the tuned range 1\.\.4"):
        out = tuned(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = tuned(torch.randn(7, 256))
        inside = tuned(torch.randn(4, 256))
    torch.testing.assert_close(out, tuned.source_module(x))
    assert again.shape == (7, 4) and inside.shape == (4, 4)


def test_another_dtype_or_shape_runs_eager(tmp_path: Path) -> None:
    """Another dtype or a tensor of another rank runs eager, never the backend."""
    tuned = _tuned(tmp_path)
    eager = tuned.source_module
    assert eager is not None
    with pytest.warns(OutsideEnvelopeWarning):
        one = torch.randn(256)
        torch.testing.assert_close(tuned(one), eager(one))
    x = torch.randn(2, 256, dtype=torch.float64)
    with pytest.raises(RuntimeError):  # eager's own error for float64 into float32 weights
        tuned(x)


def test_outside_can_raise_instead(tmp_path: Path) -> None:
    """With outside="raise" a call outside the envelope raises naming the reason."""
    tuned = _tuned(tmp_path, outside="raise")
    with pytest.raises(OutsideEnvelopeError, match=r"outside the tuned range 1\.\.4"):
        tuned(torch.randn(5, 256))


def test_dynamic_axes_are_validated_at_their_extremes_and_recorded(tmp_path: Path) -> None:
    """A backend fixed to one length fails validation at the range's extremes (recorded), the
    good one wins, and the record stores the dynamic spec."""
    samples = [torch.randn(2, 5, 4) for _ in range(2)]  # one length: only extremes differ
    run = unsafe_perform_io(
        run_tuning(
            Pooled().eval(),
            samples,
            QUICK,
            [StaticLength(), FakeBackend("good")],
            TuneOptions(cache_dir=tmp_path, max_batch_size=4, dynamic_axes={0: {1: (3, 12)}}),
        )
    ).unwrap()
    static = next(c for c in run.record.candidates if c.backend == "static")
    assert static.failure is not None and static.failure.stage == "validate"
    assert "input_0_1=3" in static.failure.message or "input_0_1=12" in static.failure.message
    assert run.tuned is not None and "good" in run.tuned.backend
    (axis,) = run.record.input_spec["dynamic"]
    assert dict(axis) == {
        "input": "input_0",
        "axis": 1,
        "min": 3,
        "max": 12,
        "opt": 5,
        "dim": "input_0_1",
        "inferred": False,
    }
    tuned = run.tuned
    for n in (3, 9, 12):  # lengths never seen in the samples, inside the range
        x = torch.randn(2, n, 4)
        torch.testing.assert_close(tuned(x), Pooled().eval()(x))
    with pytest.warns(OutsideEnvelopeWarning, match=r"outside the tuned range 3\.\.12"):
        tuned(torch.randn(2, 13, 4))


def test_inferred_axes_are_recorded_as_inferred(tmp_path: Path) -> None:
    """Samples of differing lengths without a declaration give an inferred dynamic axis."""
    samples = [torch.randn(1, n, 4) for n in (5, 9)]
    run = unsafe_perform_io(
        run_tuning(
            Pooled().eval(), samples, QUICK, [FakeBackend("good")], TuneOptions(cache_dir=tmp_path)
        )
    ).unwrap()
    (axis,) = run.record.input_spec["dynamic"]
    assert (axis["min"], axis["max"], axis["inferred"]) == (5, 9, True)
