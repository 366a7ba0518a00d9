"""Fake backends for shell tests: real configs and runners, no compiler behind them.

A fake builds a runner around the eager module that can be slowed down, perturbed, made
to return NaN, or made to fail at a chosen stage, so the shell's wiring can be checked in
milliseconds. These are fakes (working implementations), not mocks.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from returns.io import IOFailure, IOResult, IOSuccess

from aitune_fp.core.records import BackendFailure
from aitune_fp.effects.backends.base import Built, ConfigIdentity
from aitune_fp.effects.inputs.samples import Samples


@dataclass(frozen=True, slots=True)
class FakeBackend(ConfigIdentity):
    """A backend that runs the eager module with a chosen behaviour.

    ``sleep_ms`` adds latency per call; ``scale`` multiplies outputs (wrong outputs when
    != 1); ``nan`` returns NaN outputs; ``fail_build`` fails the build; ``raise_above``
    raises when called with a batch larger than it; ``raise_after_calls`` raises once
    that many calls were made (a fault that only shows while profiling).
    """

    label: str = "fake"
    sleep_ms: float = 0.0
    scale: float = 1.0
    nan: bool = False
    fail_build: bool = False
    raise_above: int | None = None
    raise_after_calls: int | None = None
    name: str = "fake"

    def unavailable_reason(self, device: torch.device) -> str | None:
        """Always available."""
        return None

    def build(
        self, module: torch.nn.Module, samples: Samples, device: torch.device, work_dir: Path
    ) -> IOResult[Built, BackendFailure]:
        """Wrap ``module`` in a runner with this fake's behaviour."""
        if self.fail_build:
            return IOFailure(BackendFailure(self.describe(), "build", "fake build failure"))
        closed: list[bool] = []
        calls: list[int] = []

        def runner(*args: Any, **kwargs: Any) -> Any:
            if closed:
                raise RuntimeError("runner used after close")
            calls.append(1)
            if self.raise_after_calls is not None and len(calls) > self.raise_after_calls:
                raise RuntimeError(f"fake fault after {self.raise_after_calls} calls")
            batch = int(next(iter([*args, *kwargs.values()])).shape[0])
            if self.raise_above is not None and batch > self.raise_above:
                raise RuntimeError(f"fake fault at batch {batch}")
            if self.sleep_ms:
                time.sleep(self.sleep_ms / 1000.0)
            with torch.inference_mode():
                out = module(*args, **kwargs)
            if self.nan:
                return out * float("nan")
            return out * self.scale if self.scale != 1.0 else out

        return IOSuccess(Built(runner, close=lambda: closed.append(True)))


@dataclass(frozen=True, slots=True)
class SeenOnlyFake(ConfigIdentity):
    """An int8 "calibrated" backend that is exact on the rows it calibrated on (the seen
    rows of its samples, :func:`~aitune_fp.effects.checks.held_out.seen_samples`) and ``off``
    times eager's output on every other row: what overfitting a calibration looks like."""

    off: float = 1.5
    name: str = "seen-only"

    @property
    def calibrated(self) -> bool:
        """Its runner depends on the samples' values."""
        return True

    @property
    def computes_in(self) -> str:
        """Judged as int8 by the accuracy policy."""
        return "int8"

    def unavailable_reason(self, device: torch.device) -> str | None:
        """Always available."""
        return None

    def build(
        self, module: torch.nn.Module, samples: Samples, device: torch.device, work_dir: Path
    ) -> IOResult[Built, BackendFailure]:
        """Remember the seen rows; the runner is exact on them only."""
        from aitune_fp.effects.checks.held_out import seen_samples

        known = torch.cat([b.args[0].reshape(b.size, -1) for b in seen_samples(samples).items])

        def runner(x: torch.Tensor) -> torch.Tensor:
            with torch.inference_mode():
                out: torch.Tensor = module(x)
            flat = x.reshape(x.shape[0], -1).to(known.device)
            seen = (flat.unsqueeze(1) == known.unsqueeze(0)).all(-1).any(-1)
            scale = torch.where(seen, 1.0, self.off).to(out.device, out.dtype)
            return out * scale.reshape(-1, *([1] * (out.dim() - 1)))

        return IOSuccess(Built(runner, info={"precision": "int8"}))
