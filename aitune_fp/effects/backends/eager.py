"""Torch eager: the module itself, on the device, in eval mode, under inference mode.

Rule: eager is the baseline every other backend is compared with; it is also a candidate
when a user lists it. Its build runs the first user sample once so that a module that
cannot run on the device fails at build, not while being timed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import torch
from returns.io import IOResult

from aitune_fp.core.records import BackendFailure
from aitune_fp.effects.backends._guard import BuildLog, available_build
from aitune_fp.effects.backends._runner import in_inference_mode, prepared
from aitune_fp.effects.backends.base import Built, ConfigIdentity
from aitune_fp.effects.inputs import Samples


@dataclass(frozen=True, slots=True)
class TorchEager(ConfigIdentity):
    """Run the ``nn.Module`` as is (the baseline).

    >>> TorchEager().describe(), TorchEager().unavailable_reason(torch.device("cpu"))
    ('eager', None)
    """

    name: str = field(default="eager", init=False)

    def unavailable_reason(self, device: torch.device) -> str | None:
        """Eager runs on every device torch supports."""
        return None

    def build(
        self, module: torch.nn.Module, samples: Samples, device: torch.device, work_dir: Path
    ) -> IOResult[Built, BackendFailure]:
        """Move the module to ``device``, switch it to eval and run one sample."""

        def build(log: BuildLog) -> Built:
            model = prepared(module, device)
            runner = in_inference_mode(model)
            samples.items[0].to(device).call(runner)
            log.write(f"eager module {type(model).__name__} on {device}")
            return Built(runner, info={"device": str(device)})

        return available_build(self, device, work_dir, build)
