"""The AOTInductor step: ``torch.export`` of :class:`CacheStep`, compiled in a child process.

Rules: one exported program serves prefill and decode at every batch size and cache capacity
(dimensions ``batch``, ``length`` and ``capacity`` are dynamic; the example batch is 2 so
the batch is not specialised to 1). The package is compiled by ``aoti_compile_and_package``
in a child process with a wall-time budget: past it the child's process group is killed and
:class:`BuildTimeout` is raised (the candidate's failure). The child may be started ahead
(:meth:`AotiStore.start`) so the compile overlaps the tune's other builds; the compiles
under way and the packages loaded are a tune's :class:`AotiStore`, passed with its steppers.
Packages are kept on disk under :func:`package_dir`, keyed by the model's class, config,
weights and dtype and the torch version, so a pick reloaded in a fresh process loads its
package, not compiling again.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from aitune_fp.effects.cache.key import weights_digest
from aitune_fp.effects.generation.cache_module import CacheStep, empty_cache

_COMPILE = (
    "import sys, torch\n"
    "ep = torch.export.load(sys.argv[1])\n"
    "torch._inductor.aoti_compile_and_package(ep, package_path=sys.argv[2])\n"
)


class BuildTimeout(RuntimeError):
    """A build that ran past its wall-time budget (the child was killed)."""


def package_dir(env: dict[str, str] | None = None) -> Path:
    """Where packages are kept: ``$AITUNE_FP_GENERATION_DIR``, else
    ``$XDG_CACHE_HOME/aitune_fp/generation`` (``~/.cache`` by default).

    >>> str(package_dir({"AITUNE_FP_GENERATION_DIR": "/g"}))
    '/g'
    >>> str(package_dir({"XDG_CACHE_HOME": "/c"}))
    '/c/aitune_fp/generation'
    """
    env = dict(os.environ) if env is None else env
    if chosen := env.get("AITUNE_FP_GENERATION_DIR"):
        return Path(chosen)
    cache = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "aitune_fp" / "generation"


def package_key(model: torch.nn.Module) -> str:
    """sha256 of the model's class, config, weights (dtype included) and the torch version."""
    config: Any = getattr(model, "config", None)
    text = f"{type(model).__qualname__}|{config!r}|{torch.__version__}|{weights_digest(model)}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def export_step(model: torch.nn.Module) -> torch.export.ExportedProgram:
    """The exported step (see the module rules)."""
    return export_program(CacheStep(model), model)


def export_program(step: torch.nn.Module, model: torch.nn.Module) -> torch.export.ExportedProgram:
    """``torch.export`` of ``step`` (a :class:`CacheStep` over ``model``), dims dynamic; the
    example inputs are made on the model's device."""
    batch, length, capacity = 2, 4, 8
    keys, values = empty_cache(model, batch, capacity)
    on = keys[0].device if keys else torch.device("cpu")
    ids = torch.zeros(batch, length, dtype=torch.long, device=on)
    args = (
        ids,
        torch.ones(batch, capacity, dtype=torch.long, device=on),
        torch.arange(length, device=on).repeat(batch, 1),
        torch.arange(length, device=on),
        keys,
        values,
    )
    b = torch.export.Dim("batch", min=1, max=1024)
    c = torch.export.Dim("capacity", min=2, max=1 << 16)
    n = torch.export.Dim("length", min=1, max=1 << 16)
    cache = [{0: b, 2: c}] * len(keys)
    shapes = ({0: b, 1: n}, {0: b, 1: c}, {0: b, 1: n}, {0: n}, cache, cache)
    with torch.no_grad():
        return torch.export.export(step, args, dynamic_shapes=shapes, strict=False)


@dataclass
class _Pending:
    """A compile running in a child process, due by ``deadline`` (perf_counter seconds)."""

    child: subprocess.Popen[bytes]
    work: tempfile.TemporaryDirectory[str]
    package: Path
    deadline: float


def _start(model: torch.nn.Module, package: Path, budget_s: float) -> _Pending:
    package.parent.mkdir(parents=True, exist_ok=True)
    work = tempfile.TemporaryDirectory(dir=package.parent)
    program = Path(work.name) / "step.pt2"
    torch.export.save(export_step(model), program)
    child = subprocess.Popen(
        [sys.executable, "-c", _COMPILE, str(program), str(Path(work.name) / "package.pt2")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    return _Pending(child, work, package, time.perf_counter() + budget_s)


def _finish(job: _Pending) -> Path:
    budget = job.deadline - time.perf_counter()
    try:
        _, err = job.child.communicate(timeout=max(budget, 0.0))
    except subprocess.TimeoutExpired:
        os.killpg(job.child.pid, signal.SIGKILL)
        job.child.wait()
        job.work.cleanup()
        raise BuildTimeout(
            "AOTInductor compile ran past its budget (the child was killed)"
        ) from None
    if job.child.returncode != 0:
        job.work.cleanup()
        tail = err.decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
        raise RuntimeError(f"AOTInductor compile failed: {tail[0]}")
    os.replace(Path(job.work.name) / "package.pt2", job.package)
    job.work.cleanup()
    return job.package


def _package_path(model: torch.nn.Module) -> Path:
    return package_dir() / f"{package_key(model)}.pt2"


@dataclass
class AotiStore:
    """One tune's AOTInductor packages: the compiles under way (a child process each) and
    the packages loaded, by path; passed (a tune hands it on with its steppers), never a
    module global, so two tunes in one process keep their own."""

    pending: dict[Path, _Pending] = field(default_factory=dict)
    loaded: dict[Path, AotiStep] = field(default_factory=dict)

    def under_way(self, model: torch.nn.Module) -> bool:
        """True when the model's package is on disk or its compile has been started."""
        package = _package_path(model)
        return package.exists() or package in self.pending

    def start(self, model: torch.nn.Module, budget_s: float) -> None:
        """Export here and start compiling the package in the background (nothing when it
        is on disk or under way); :meth:`build` waits for it."""
        package = _package_path(model)
        if not package.exists() and package not in self.pending:
            self.pending[package] = _start(model, package, budget_s)

    def build(self, model: torch.nn.Module, budget_s: float) -> Path:
        """The model's package: from disk when built before, else the background
        compile's (:meth:`start`) or a new one, within its budget (``BuildTimeout``)."""
        package = _package_path(model)
        if package.exists():
            return package
        job = self.pending.pop(package, None) or _start(model, package, budget_s)
        return _finish(job)

    def load(self, package: Path) -> AotiStep:
        """The loaded package, shared by every stepper of this store that uses it."""
        if package not in self.loaded:
            self.loaded[package] = AotiStep(package)
        return self.loaded[package]


class AotiStep:
    """A loaded package called as a step: (ids, mask, positions, cache_position, cache)."""

    def __init__(self, package: Path) -> None:
        self.package = package
        self._runner: Any = torch._inductor.aoti_load_package(str(package))

    def __call__(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        position_ids: torch.Tensor,
        cache_position: torch.Tensor,
        cache: Any,
    ) -> torch.Tensor:
        """The next-token logits; the cache's tensors are updated in place. Inputs are made
        contiguous (the package reads them with the strides it was compiled for, so a column
        slice would be read wrongly) and the output is copied (the runner may reuse it)."""
        keys = [layer.keys for layer in cache.layers]
        values = [layer.values for layer in cache.layers]
        dense = [t.contiguous() for t in (input_ids, attention_mask, position_ids, cache_position)]
        out = self._runner(*dense, keys, values)
        logits: torch.Tensor = out.clone()
        return logits
