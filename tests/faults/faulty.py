"""Backends and modules that really do the fault: segfault, ``os._exit``, abort, hang, kill.

Each fault is real (a ``ctypes`` read of address 0, ``os._exit``, ``os.abort``,
``time.sleep``, a ``SIGKILL`` of its own process as the kernel's out-of-memory killer
would send) and happens only where its config says (the stage, the batch size), so a
test can check that it ends only its own worker. They are fakes, not mocks.
"""

from __future__ import annotations

import ctypes
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from returns.io import IOResult, IOSuccess

from aitune_fp.core.records import BackendFailure
from aitune_fp.effects.backends.base import Built, ConfigIdentity
from aitune_fp.effects.inputs.samples import Samples


def do(fault: str) -> None:
    """Do ``fault`` to this process now."""
    if fault == "segfault":
        ctypes.string_at(0)
    elif fault == "exit":
        os._exit(7)
    elif fault == "abort":
        os.abort()
    elif fault == "hang":
        time.sleep(3600)
    elif fault == "oom_kill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif fault == "sys_exit":
        raise SystemExit(3)
    else:
        raise ValueError(f"unknown fault {fault!r}")


@dataclass(frozen=True, slots=True)
class Faulty(ConfigIdentity):
    """Runs the eager module, but does ``fault`` at ``stage`` (``build``, or ``call`` at
    a batch of at least ``at_batch`` rows, after ``after_calls`` calls at such batches)."""

    fault: str = "segfault"
    stage: str = "call"
    at_batch: int = 1
    after_calls: int = 0
    name: str = field(default="faulty", init=False)

    def unavailable_reason(self, device: torch.device) -> str | None:
        """Always available."""
        return None

    def build(
        self, module: torch.nn.Module, samples: Samples, device: torch.device, work_dir: Path
    ) -> IOResult[Built, BackendFailure]:
        """The eager runner with the fault wired in."""
        if self.stage == "build":
            do(self.fault)
        work_dir.mkdir(parents=True, exist_ok=True)
        seen: list[int] = []

        def runner(*args: Any, **kwargs: Any) -> Any:
            rows = int(next(iter([*args, *kwargs.values()])).shape[0])
            if self.stage == "call" and rows >= self.at_batch:
                seen.append(rows)
                if len(seen) > self.after_calls:
                    do(self.fault)
            with torch.inference_mode():
                return module(*args, **kwargs)

        return IOSuccess(Built(runner, info={"device": str(device)}))


@dataclass(frozen=True, slots=True)
class Plain(ConfigIdentity):
    """The eager module as is, under another name (a healthy competitor)."""

    label: str = "plain"
    name: str = field(default="plain", init=False)

    def unavailable_reason(self, device: torch.device) -> str | None:
        """Always available."""
        return None

    def build(
        self, module: torch.nn.Module, samples: Samples, device: torch.device, work_dir: Path
    ) -> IOResult[Built, BackendFailure]:
        """The module's own forward."""

        def runner(*args: Any, **kwargs: Any) -> Any:
            with torch.inference_mode():
                return module(*args, **kwargs)

        return IOSuccess(Built(runner, info={"device": str(device)}))


class FaultyModule(torch.nn.Module):
    """A linear layer whose forward does ``fault`` on a batch of ``at_batch`` rows or more
    (only outside ``torch.compile``/export tracing when ``eager_only``)."""

    def __init__(self, fault: str, at_batch: int) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)
        self.fault = fault
        self.at_batch = at_batch

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``fc(x)``, or the fault."""
        if x.shape[0] >= self.at_batch:
            do(self.fault)
        return self.fc(x)  # type: ignore[no-any-return]
