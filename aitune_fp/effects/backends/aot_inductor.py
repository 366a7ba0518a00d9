"""TorchInductor ahead-of-time: ``torch.export`` + an AOTInductor ``.pt2`` package.

Rules:
- the program is the shared export of the module's own call (:mod:`._shared_export`: one
  dynamic ``batch`` dimension on every input's batch axis and one ``Dim`` per dynamic
  dimension of the input spec, over their declared ranges; loaded when another backend
  exported it already), compiled and packaged to ``work_dir/model.pt2`` (the artifact),
  then loaded back and run from the package, so what is validated and timed is what a
  deployment loads; ``info["export"]`` says whether the program was shared or fresh;
- the runner takes the module's own call (positional and keyword tensors) and returns the
  module's own output structure; the package's call spec is read once, at load, so each call
  costs one flatten and one unflatten;
- ``precision`` ``bfloat16``/``float16`` exports the module computing in that dtype
  (:class:`~._precision.ComputeIn`, a cast copy): the casts of the floating inputs in and
  the outputs back are in the program, so the package takes and returns eager's dtypes,
  and a saved package loads back running exactly as tuned; that program is keyed by the
  cast module's own digest, so it is never confused with the float32 one. Where the dtype
  is not native the variant is unavailable with :func:`~._lowp.lowp_unavailable`'s reason;
- ``freezing=True`` adds Inductor's ``freezing`` to ``inductor_configs``: the weights
  become constants folded and prepacked into the package.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import torch
import torch.utils._pytree as pytree
from returns.io import IOResult

from aitune_fp.core.records import BackendFailure
from aitune_fp.effects.backends._build_guard import BuildLog, available_build
from aitune_fp.effects.backends._export import example_batch
from aitune_fp.effects.backends._lowp import (
    check_fields,
    computing_in,
    io_cast_info,
    lowp_unavailable,
)
from aitune_fp.effects.backends._runner import prepared
from aitune_fp.effects.backends._shared_export import on_program
from aitune_fp.effects.backends._treespec import keyword_names
from aitune_fp.effects.backends.base import Built, ConfigIdentity, Declaration
from aitune_fp.effects.inputs.containers import read_spec
from aitune_fp.effects.inputs.samples import Samples


def _package_runner(compiled: Any) -> Callable[..., Any]:
    """A fast caller of a loaded package: ``(*args, **kwargs)`` → the exported outputs."""
    in_spec_text, out_spec_text = compiled.loader.get_call_spec()
    in_spec = read_spec(in_spec_text)
    out_spec = read_spec(out_spec_text)  # a KV cache's class is registered on the way
    keywords = keyword_names(in_spec)
    boxed_run = compiled.loader.boxed_run
    single = out_spec.is_leaf()

    def run(*args: torch.Tensor, **kwargs: torch.Tensor) -> Any:
        flat = [*args, *(kwargs[k] for k in keywords)]
        outputs = boxed_run(flat)
        return outputs[0] if single else pytree.tree_unflatten(outputs, out_spec)

    return run


def load_package(path: Path, device: torch.device) -> Built:
    """The ``.pt2`` package at ``path`` loaded on ``device``, as a built backend."""
    index = device.index if device.index is not None else -1
    compiled = torch._inductor.aoti_load_package(str(path), device_index=index)
    return Built(_package_runner(compiled), artifact=path, info={"device": str(device)})


def _autotunes(configs: tuple[tuple[str, Any], ...]) -> bool:
    """Whether compiler options turn an autotuning mode on (the build then times kernels).

    >>> _autotunes((("max_autotune", True),)), _autotunes((("freezing", True),))
    (True, False)
    """
    return any("autotune" in str(name) and bool(value) for name, value in configs)


@dataclass(frozen=True, slots=True)
class AOTInductor(ConfigIdentity):
    """Export with a dynamic batch, compile with AOTInductor, load the ``.pt2`` to run.

    ``inductor_configs`` are ``(name, value)`` pairs passed to the compiler.

    >>> AOTInductor().describe(), AOTInductor(precision="bfloat16", freezing=True).describe()
    ('aot_inductor', "aot_inductor(precision='bfloat16', freezing=True)")
    """

    declaration: ClassVar[Declaration] = Declaration(
        order=20,
        compiles=True,
        libraries=("torch.export", "torch._inductor", "torch._inductor.package"),
        loader=lambda _config, request: load_package(request.artifact, request.device),
        defaults={"*": ({},)},
        variants={  # measured in docs/precision.md
            "wide": {
                "cpu": ({"precision": "bfloat16", "freezing": True},),
                "cuda": ({"precision": "float16"},),
            },
        },
        times_kernels=lambda config: _autotunes(config.inductor_configs),
    )

    inductor_configs: tuple[tuple[str, Any], ...] = ()
    precision: str = "float32"
    freezing: bool = False
    name: str = field(default="aot_inductor", init=False)

    def __post_init__(self) -> None:
        check_fields("aot_inductor", self.precision, False)

    @property
    def computes_in(self) -> str:
        """Its ``precision``."""
        return self.precision

    def unavailable_reason(self, device: torch.device) -> str | None:
        """AOTInductor ships with torch (it needs a C++ compiler, checked at build);
        reduced precision needs native support."""
        return lowp_unavailable(self.precision, device)

    def _configs(self) -> dict[str, Any] | None:
        """The compiler's configs: ``inductor_configs``, plus ``freezing`` when asked."""
        configs = dict(self.inductor_configs) | ({"freezing": True} if self.freezing else {})
        return configs or None

    def build(
        self, module: torch.nn.Module, samples: Samples, device: torch.device, work_dir: Path
    ) -> IOResult[Built, BackendFailure]:
        """Export, compile and package to ``model.pt2``, then load it back."""

        def build(log: BuildLog) -> Built:
            first = samples.items[0].to(device)
            model = computing_in(prepared(module, device), self.precision, False, first.call)
            batch = example_batch(samples, device)

            def package(program: Any, _shared: object = None) -> Built:
                log.write(f"exported: range constraints {program.range_constraints}")
                with log.timed("compile"):
                    path = torch._inductor.aoti_compile_and_package(
                        program,
                        package_path=str(work_dir / "model.pt2"),
                        inductor_configs=self._configs(),
                    )
                    log.write(f"packaged to {path}")
                    return load_package(Path(path), device)

            built, source = on_program(model, batch, samples.spec, device, work_dir, log, package)
            info = {**built.info, "export": source, "freezing": self.freezing}
            return dataclasses.replace(built, info=info | io_cast_info(self.precision, False))

        return available_build(self, device, work_dir, build)
