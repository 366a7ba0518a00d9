"""A backend from outside aitune_fp, written as one file: TorchScript.

The build traces the module with ``torch.jit.trace``, saves the program with
``torch.jit.save`` to ``work_dir/model.ts`` (its own artifact format) and runs the program
loaded back from that file, so what is validated and timed is what a deployment loads;
the declared loader opens a saved ``model.ts`` again without the module. Nothing else in
the repository names this module: the registry, the artifact cache and loader, the
environment report, the isolation preload and the SDK import contract all read its
declaration (docs/backends.md, "Adding a backend").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import torch
import torch.utils._pytree as pytree
from returns.io import IOResult

from aitune_fp.backends import (
    BackendFailure,
    BuildLog,
    Built,
    ConfigIdentity,
    Declaration,
    Library,
    LoadRequest,
    Samples,
    available_build,
)

ARTIFACT = "model.ts"


def _runner(program: Any) -> Callable[..., Any]:
    """Call the TorchScript program under inference mode."""

    def run(*args: Any, **kwargs: Any) -> Any:
        with torch.inference_mode():
            return program(*args, **kwargs)

    return run


def _load(config: TorchScript, request: LoadRequest) -> Built:
    """The saved program at ``request.artifact``, on the request's device."""
    import torch.jit

    program = torch.jit.load(str(request.artifact), map_location=request.device)
    request.log.write(f"loaded {request.artifact.name} for {config.describe()}")
    info = {"device": str(request.device), "format": "torchscript"}
    return Built(_runner(program), artifact=request.artifact, info=info)


@dataclass(frozen=True, slots=True)
class TorchScript(ConfigIdentity):
    """Trace the module to TorchScript, save it and run the saved program.

    ``check_trace`` lets ``torch.jit.trace`` re-run the module to compare its outputs.
    """

    declaration: ClassVar[Declaration] = Declaration(
        libraries=("torch.jit",),
        sdks=("torch.jit",),
        versions=(Library("torchscript", ("torch",)),),
        loader=_load,
        defaults={"cpu": ({},)},
    )

    check_trace: bool = False
    name: str = field(default="torchscript", init=False)

    def unavailable_reason(self, device: torch.device) -> str | None:
        """TorchScript ships with torch and runs wherever the module does."""
        return None

    def build(
        self, module: torch.nn.Module, samples: Samples, device: torch.device, work_dir: Path
    ) -> IOResult[Built, BackendFailure]:
        """Trace with the first sample, save to ``model.ts``, load it back and run it."""

        def build(log: BuildLog) -> Built:
            import torch.jit

            model = module.to(device).eval()
            first = samples.items[0].to(device)
            with torch.no_grad():
                traced = torch.jit.trace(
                    model,
                    example_inputs=None if first.kwargs else tuple(first.args),
                    example_kwarg_inputs=dict(first.kwargs) or None,
                    check_trace=self.check_trace,
                    strict=False,
                )
            path = work_dir / ARTIFACT
            torch.jit.save(traced, str(path))
            log.write(f"traced and saved to {path}")
            outputs = pytree.tree_flatten(first.call(model))[1]
            built = _load(self, LoadRequest(path, samples.spec, outputs, device, work_dir, log))
            first.call(built.runner)
            return built

        return available_build(self, device, work_dir, build)
