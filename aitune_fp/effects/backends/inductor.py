"""TorchInductor just-in-time: ``torch.compile`` with a configurable mode.

Rules:
- ``mode`` is one of torch.compile's modes (``None`` is torch's default); ``dynamic`` and
  ``fullgraph`` are passed through unchanged;
- torch compiles lazily, so the build runs the first user sample through the compiled
  module: an error in tracing or code generation surfaces as a build failure;
- torch recompiles on a new input shape; the profiler's warm-up at each batch size absorbs
  that, so no compile time lands in timed calls;
- with dynamic axes in the input spec and ``dynamic`` left to torch (``None``), the build's
  first call marks them dynamic over their ranges (``torch._dynamo.mark_dynamic``), so the
  first graph already serves every size in range instead of recompiling per length.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import torch
from returns.io import IOResult

from aitune_fp.core.records import BackendFailure
from aitune_fp.effects.backends._guard import BuildLog, available_build
from aitune_fp.effects.backends._runner import in_inference_mode, prepared
from aitune_fp.effects.backends.base import Built, ConfigIdentity, Declaration
from aitune_fp.effects.inputs import Batch, Samples

MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


@dataclass(frozen=True, slots=True)
class InductorJIT(ConfigIdentity):
    """``torch.compile(module, mode=mode, dynamic=dynamic, fullgraph=fullgraph)``.

    >>> InductorJIT().describe(), InductorJIT(mode="max-autotune").describe()
    ('inductor', "inductor(mode='max-autotune')")
    >>> InductorJIT(mode="fast")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: inductor mode must be one of (None, 'default', ...), got 'fast'
    """

    declaration: ClassVar[Declaration] = Declaration(
        order=10,
        libraries=("torch._dynamo", "torch._inductor.compile_fx"),
        defaults={"*": ({},)},
    )

    mode: str | None = None
    dynamic: bool | None = None
    fullgraph: bool = False
    name: str = field(default="inductor", init=False)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"inductor mode must be one of {MODES}, got {self.mode!r}")

    def unavailable_reason(self, device: torch.device) -> str | None:
        """Inductor ships with torch; CUDA graphs modes need a CUDA device."""
        if self.mode == "reduce-overhead" and device.type != "cuda":
            return "mode 'reduce-overhead' (CUDA graphs) needs a CUDA device"
        return None

    def build(
        self, module: torch.nn.Module, samples: Samples, device: torch.device, work_dir: Path
    ) -> IOResult[Built, BackendFailure]:
        """Compile the module and run the first sample to force code generation."""

        def build(log: BuildLog) -> Built:
            model = prepared(module, device)
            compiled = torch.compile(
                model, mode=self.mode, dynamic=self.dynamic, fullgraph=self.fullgraph
            )
            runner = in_inference_mode(compiled)
            first = samples.items[0].to(device)
            if self.dynamic is None and samples.spec.dims():
                first = _marked(first, samples)
                log.write(f"marked dynamic: {sorted(samples.spec.dims())}")
            first.call(runner)
            log.write(f"compiled with mode={self.mode!r} dynamic={self.dynamic!r} on {device}")
            return Built(runner, info={"mode": self.mode or "default", "device": str(device)})

        return available_build(self, device, work_dir, build)


def _marked(batch: Batch, samples: Samples) -> Batch:
    """Copies of ``batch``'s tensors with the spec's dynamic axes marked over their ranges."""
    spec = samples.spec
    n = len(spec.positional)

    def mark(t: torch.Tensor, index: int) -> torch.Tensor:
        copy = t.clone()
        for d in spec.tensors[index].dynamic:
            low = d.min if d.min >= 2 else None  # torch specialises sizes 0 and 1
            torch._dynamo.mark_dynamic(copy, d.axis, min=low, max=d.max)
        return copy

    args = tuple(mark(a, i) for i, a in enumerate(batch.args))
    kwargs = {k: mark(v, n + i) for i, (k, v) in enumerate(batch.kwargs.items())}
    return Batch(args, kwargs, batch.size)
