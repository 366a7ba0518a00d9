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
  first graph already serves every size in range instead of recompiling per length;
- ``precision`` ``bfloat16``/``float16`` compiles the module computing in that dtype
  (:mod:`._lowp`: a cast copy, or the float32 module under ``autocast=True``) with the
  casts of the floating inputs in and outputs back inside the compiled program; where the
  dtype is not native it is unavailable with :func:`~._lowp.lowp_unavailable`'s reason;
- ``freezing=True`` compiles with Inductor's ``freezing`` option: the weights become
  constants folded and prepacked for oneDNN (the runner calls under inference mode, which
  freezing needs). It is passed as a compile option, never set globally, so the compiled
  backend differs from the unfrozen one and dynamo does not reuse the other's graph.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import torch
from returns.io import IOResult

from aitune_fp.core.records import BackendFailure
from aitune_fp.effects.backends._build_guard import BuildLog, available_build
from aitune_fp.effects.backends._lowp import (
    check_fields,
    computing_in,
    io_cast_info,
    lowp_unavailable,
)
from aitune_fp.effects.backends._runner import in_inference_mode, prepared
from aitune_fp.effects.backends.base import Built, ConfigIdentity, Declaration
from aitune_fp.effects.inputs.samples import Batch, Samples

MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def fx_graph_cache_on() -> bool:
    """Whether TorchInductor keeps compiled graphs on disk (its FX-graph cache): its config
    when this process has imported it (never imported here for this: a background thread
    may be importing Inductor), else torch's default, on, unless the environment turns it
    off. A build while it is on fills the cache the sweep's build of the same config reads.
    """
    settings = sys.modules.get("torch._inductor.config")
    if settings is not None:
        return bool(settings.fx_graph_cache)
    return os.environ.get("TORCHINDUCTOR_FX_GRAPH_CACHE", "1") != "0"


@dataclass(frozen=True, slots=True)
class InductorJIT(ConfigIdentity):
    """``torch.compile(module, mode=mode, dynamic=dynamic, fullgraph=fullgraph)``.

    >>> InductorJIT().describe(), InductorJIT(mode="max-autotune").describe()
    ('inductor', "inductor(mode='max-autotune')")
    >>> InductorJIT(mode="fast")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: inductor mode must be one of (None, 'default', ...), got 'fast'
    >>> InductorJIT(precision="bfloat16", freezing=True).describe()
    "inductor(precision='bfloat16', freezing=True)"
    """

    declaration: ClassVar[Declaration] = Declaration(
        order=10,
        compiles=True,
        containers=True,
        libraries=("torch._dynamo", "torch._inductor.compile_fx"),
        defaults={"*": ({},)},
        variants={  # measured in docs/precision.md
            "default": {
                "cpu": ({"precision": "bfloat16", "freezing": True},),
                "cuda": ({"precision": "float16"},),
            },
            "wide": {
                "cpu": ({"precision": "bfloat16", "autocast": True},),
                "cuda": ({"precision": "bfloat16"},),
            },
        },
        times_kernels=lambda c: "autotune" in (c.mode or ""),
        warms_own_cache=fx_graph_cache_on,
    )

    mode: str | None = None
    dynamic: bool | None = None
    fullgraph: bool = False
    precision: str = "float32"
    autocast: bool = False
    freezing: bool = False
    name: str = field(default="inductor", init=False)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"inductor mode must be one of {MODES}, got {self.mode!r}")
        check_fields("inductor", self.precision, self.autocast)

    @property
    def computes_in(self) -> str:
        """Its ``precision``."""
        return self.precision

    def unavailable_reason(self, device: torch.device) -> str | None:
        """Inductor ships with torch; CUDA graphs modes need a CUDA device; reduced
        precision needs native support."""
        if self.mode == "reduce-overhead" and device.type != "cuda":
            return "mode 'reduce-overhead' (CUDA graphs) needs a CUDA device"
        return lowp_unavailable(self.precision, device)

    def _options(self) -> dict[str, Any]:
        """``torch.compile``'s mode and options: freezing joins the mode's own options
        (torch takes a mode or options, not both)."""
        if not self.freezing:
            return {"mode": self.mode}
        modes = {} if self.mode is None else torch._inductor.list_mode_options(self.mode)
        return {"options": {**modes, "freezing": True}}

    def build(
        self, module: torch.nn.Module, samples: Samples, device: torch.device, work_dir: Path
    ) -> IOResult[Built, BackendFailure]:
        """Compile the module and run the first sample to force code generation."""

        def build(log: BuildLog) -> Built:
            model = prepared(module, device)
            first = samples.items[0].to(device)
            target = computing_in(model, self.precision, self.autocast, first.call)
            compiled = torch.compile(
                target, dynamic=self.dynamic, fullgraph=self.fullgraph, **self._options()
            )
            runner = in_inference_mode(compiled)
            if self.dynamic is None and samples.spec.dims():
                first = _marked(first, samples)
                log.write(f"marked dynamic: {sorted(samples.spec.dims())}")
            first.call(runner)
            log.write(
                f"compiled with mode={self.mode!r} dynamic={self.dynamic!r} on {device} "
                f"({self.precision}, freezing={self.freezing})"
            )
            info: dict[str, object] = {"mode": self.mode or "default", "device": str(device)}
            info |= io_cast_info(self.precision, self.autocast)
            return Built(runner, info={**info, "freezing": self.freezing})

        return available_build(self, device, work_dir, build)


def _marked(batch: Batch, samples: Samples) -> Batch:
    """Copies of ``batch``'s tensors with the spec's dynamic axes marked over their ranges."""
    by_name = dict(zip(samples.spec.names, samples.spec.tensors, strict=True))

    def mark(name: str, t: torch.Tensor) -> torch.Tensor:
        copy = t.clone()
        for d in by_name[name].dynamic:
            low = d.min if d.min >= 2 else None  # torch specialises sizes 0 and 1
            torch._dynamo.mark_dynamic(copy, d.axis, min=low, max=d.max)
        return copy

    return batch.with_tensors(mark)
