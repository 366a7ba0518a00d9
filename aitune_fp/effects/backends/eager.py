"""Torch eager: the module itself, on the device, in eval mode, under inference mode.

Rule: eager is the baseline every other backend is compared with; it is also a candidate
when a user lists it. Its build runs the first user sample once so that a module that
cannot run on the device fails at build, not while being timed. ``precision`` ``bfloat16``
or ``float16`` makes it a reduced-precision candidate (:mod:`._lowp`: a cast copy, or
``autocast=True``), whose floating inputs and outputs keep eager's dtypes; the build info
says so (``io_cast``), and ``load`` rebuilds it the same way from the saved config.
``threads`` (a runtime option, :mod:`._threads`) runs each call at that many torch
intra-op threads and restores the process's count after it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import torch
from returns.io import IOResult

from aitune_fp.core.records import BackendFailure
from aitune_fp.effects.backends._build_guard import BuildLog, available_build
from aitune_fp.effects.backends._lowp import DTYPES, low_precision, lowp_unavailable
from aitune_fp.effects.backends._precision import output_dtypes
from aitune_fp.effects.backends._runner import in_inference_mode, prepared
from aitune_fp.effects.backends._runtime_fields import runtime_option
from aitune_fp.effects.backends._threads import with_torch_threads
from aitune_fp.effects.backends.base import Built, ConfigIdentity, Declaration
from aitune_fp.effects.inputs.samples import Samples


@dataclass(frozen=True, slots=True)
class TorchEager(ConfigIdentity):
    """Run the ``nn.Module`` as is (the baseline).

    >>> TorchEager().describe(), TorchEager().unavailable_reason(torch.device("cpu"))
    ('eager', None)
    >>> TorchEager(precision="bfloat16").describe()
    "eager(precision='bfloat16')"
    """

    declaration: ClassVar[Declaration] = Declaration(
        order=0,  # the baseline: no default candidate, only the precision variants
        containers=True,
        variants={
            "default": {
                "cpu": ({"precision": "bfloat16"},),
                "cuda": ({"precision": "float16"}, {"precision": "bfloat16"}),
            },
            "wide": {
                "cpu": ({"precision": "bfloat16", "autocast": True}, {"threads": 1}),
                "cuda": ({"precision": "bfloat16", "autocast": True},),
            },
        },
    )

    precision: str = "float32"
    autocast: bool = False
    threads: int = runtime_option(0)
    """torch intra-op threads while it runs (0: the process's count; :mod:`._threads`)."""
    name: str = field(default="eager", init=False)

    def __post_init__(self) -> None:
        if self.precision not in ("float32", *DTYPES):
            raise ValueError(f"eager precision must be float32 or one of {tuple(DTYPES)}")
        if self.autocast and self.precision == "float32":
            raise ValueError("autocast needs a reduced precision")
        if self.threads < 0:
            raise ValueError(f"threads must be >= 0, got {self.threads}")

    @property
    def computes_in(self) -> str:
        """Its ``precision``."""
        return self.precision

    def unavailable_reason(self, device: torch.device) -> str | None:
        """Eager runs on every device torch supports; reduced precision where it is native."""
        return lowp_unavailable(self.precision, device)

    def build(
        self, module: torch.nn.Module, samples: Samples, device: torch.device, work_dir: Path
    ) -> IOResult[Built, BackendFailure]:
        """Move the module to ``device``, switch it to eval and run one sample."""

        def build(log: BuildLog) -> Built:
            model = prepared(module, device)
            runner = in_inference_mode(model)
            first = samples.items[0].to(device)
            outputs = first.call(runner)
            info: dict[str, object] = {"device": str(device)}
            if self.precision != "float32":
                how = "autocast" if self.autocast else "cast"
                lowp = low_precision(model, self.precision, self.autocast, output_dtypes(outputs))
                runner = in_inference_mode(lowp)
                first.call(runner)
                info |= {
                    "precision": self.precision,
                    "io_cast": f"{how}: floating inputs to {self.precision}, outputs back",
                }
            if self.threads:
                runner = with_torch_threads(runner, self.threads)
                info["torch_threads"] = self.threads
            log.write(f"eager module {type(model).__name__} on {device} ({self.precision})")
            return Built(runner, info=info)

        return available_build(self, device, work_dir, build)
