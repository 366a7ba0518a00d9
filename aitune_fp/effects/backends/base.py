"""What every backend is: a frozen config that declares its facts, plus a build effect.

Rules:
- a backend config is a frozen dataclass; ``describe()`` shows its name and only the
  fields that differ from their defaults; ``key()`` is a stable hash of the config (both
  come from :class:`ConfigIdentity`, which every shipped config mixes in);
- everything the rest of the package needs to know about a backend is read through the
  :class:`Backend` protocol, never probed: the class-level :class:`Declaration` (libraries
  to preload, inference SDKs and the modules that may import them, versions to report,
  extras hint, the loader of its saved artifact, its default candidates and search
  variants) and three per-config facts (:attr:`Backend.computes_in`,
  :attr:`Backend.calibrated`, :meth:`Backend.with_batch_range`); :class:`ConfigIdentity`
  gives every one of them the plain default (an empty declaration, float32, not
  calibrated, no batch range);
- ``unavailable_reason(device)`` is cheap and side-effect free: ``None`` when the backend
  can run on ``device``, else a human reason ("tensorrt is not installed", "needs a CUDA
  device");
- ``build(...)`` returns ``IOResult[Built, BackendFailure]`` with stage ``build``; it never
  raises for a backend problem and writes its full log under ``work_dir/build.log``;
- an inference SDK is imported only inside its own backend module (and the helper modules
  its declaration names), lazily, in ``build`` or ``unavailable_reason``.

Longer than 260 lines: the backend protocol and its declaration types are what a backend
author reads together.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

import torch
import torch.utils._pytree as pytree
from returns.io import IOResult

from aitune_fp.core.records import BackendFailure
from aitune_fp.effects.backends._build_log import BuildLog
from aitune_fp.effects.backends._runtime_fields import keyed_fields
from aitune_fp.effects.inputs.samples import InputSpec, Samples


def _noop() -> None:
    return None


@dataclass(frozen=True, slots=True)
class Built:
    """A built backend: ``runner(*args, **kwargs)`` runs inference; ``close()`` frees it.

    ``artifact`` is the file a deployment can load (``.pt2``, ``.onnx``, ``.engine``) when
    the backend produces one; ``info`` holds JSON-able build facts (provider, mode, …).
    """

    runner: Callable[..., Any]
    close: Callable[[], None] = _noop
    artifact: Path | None = None
    info: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Library:
    """A library whose version the environment report shows: its import ``name``, the
    distributions that may provide it (first installed wins) and, when aitune_fp supports
    only some versions, the range ``(lowest, first unsupported or None)``."""

    name: str
    distributions: tuple[str, ...]
    supported: tuple[tuple[int, ...], tuple[int, ...] | None] | None = None


@dataclass(frozen=True, slots=True)
class LoadRequest:
    """What loading a saved artifact needs besides the config: the artifact, its call's
    input spec and output structure, where to run, a scratch folder and the build log."""

    artifact: Path
    spec: InputSpec
    outputs: pytree.TreeSpec
    device: torch.device
    work_dir: Path
    log: BuildLog


Options = Mapping[str, Any]
"""A config's constructor arguments (``{}``: the defaults)."""
Loader = Callable[[Any, LoadRequest], Built]
"""Loads a config's saved artifact back as a runner: ``loader(config, request)``."""


@dataclass(frozen=True, slots=True)
class Declaration:
    """Everything a backend declares once, in its own module, for the rest to derive from.

    - ``order``: its place among the shipped backends (registry lists, default candidates);
    - ``libraries``: the modules its build imports, preloaded before anything is measured
      (:mod:`aitune_fp.effects.machine.preload`); ``server_skips``: those of them the workers' fork
      server must not import (they may touch CUDA on import);
    - ``sdks``: inference SDK packages that only this backend's module and the helper
      modules in ``sdk_modules`` may import (the import-linter contract
      :class:`aitune_fp.testing.contracts.DeclaredSdkContract` derives from it);
    - ``versions``: the libraries whose versions the environment report shows (and whose
      supported ranges :mod:`._versions` checks);
    - ``extra``: the pip extra that installs its SDK (``onnx`` for
      ``pip install aitune-fp[onnx]``), or ``None`` when torch suffices;
    - ``loader``: loads a saved artifact back without rebuilding (``None``: the backend is
      rebuilt from the module instead, as a recipe);
    - ``defaults``: device type → the options of its default candidates there (``"*"``: any
      device type not named); ``variants``: search level (``default``, ``wide``) → device
      type → the options of the reduced-precision variants that level adds;
    - ``times_kernels``: whether a config's build picks kernels by timing them (TensorRT's
      tactic selection, Inductor's autotuning modes): ``True``/``False`` for every config,
      or a function of the config; such a build needs a quiet machine as any timing does,
      so it is never built ahead (:mod:`aitune_fp.core.session.prebuild`);
    - ``warms_own_cache``: a function telling whether a build now fills a compiler cache of
      its own that the sweep's later build of the same config reads (TorchInductor's
      FX-graph cache while it is on); ``None``: it has none. With ``loader``, the facts
      that make a build ahead worth doing;
    - ``compiles``: its build runs a code compiler over the model (C++ or GPU kernels:
      Inductor, AOTInductor, TensorRT), seconds to minutes of CPU where a translation or a
      load takes a fraction of that; builds ahead start with these
      (:func:`~aitune_fp.core.session.prebuild.buildable_ahead`), so the long builds do not
      trail the short ones;
    - ``containers``: it takes structured inputs (:mod:`aitune_fp.effects.inputs.call_tree`:
      containers rebuilt at every call, as eager and torch.compile run them); a backend
      that exports a graph of tensor inputs leaves it ``False`` and records, for such
      inputs, a failure at ``export`` naming each container's type.

    >>> Declaration(times_kernels=True).kernels_timed(object())
    True
    >>> Declaration(times_kernels=lambda c: c == "slow").kernels_timed("fast")
    False
    """

    order: int = 1000
    libraries: tuple[str, ...] = ()
    server_skips: tuple[str, ...] = ()
    sdks: tuple[str, ...] = ()
    sdk_modules: tuple[str, ...] = ()
    versions: tuple[Library, ...] = ()
    extra: str | None = None
    loader: Loader | None = None
    defaults: Mapping[str, tuple[Options, ...]] = field(default_factory=dict)
    variants: Mapping[str, Mapping[str, tuple[Options, ...]]] = field(default_factory=dict)
    times_kernels: bool | Callable[[Any], bool] = False
    warms_own_cache: Callable[[], bool] | None = None
    compiles: bool = False
    containers: bool = False

    def kernels_timed(self, config: Any) -> bool:
        """Whether ``config``'s build times kernels (``times_kernels`` applied to it)."""
        rule = self.times_kernels
        return rule(config) if callable(rule) else bool(rule)

    @property
    def install_hint(self) -> str | None:
        """The pip command that installs this backend's SDK, when it needs one.

        >>> Declaration(extra="onnx").install_hint, Declaration().install_hint
        ('pip install aitune-fp[onnx]', None)
        """
        return None if self.extra is None else f"pip install aitune-fp[{self.extra}]"

    def default_options(self, kind: str) -> tuple[Options, ...]:
        """The options of the default candidates on device type ``kind``.

        >>> Declaration(defaults={"*": ({},), "cuda": ({}, {"a": 1})}).default_options("mps")
        ({},)
        """
        return self.defaults.get(kind, self.defaults.get("*", ()))

    def variant_options(self, level: str, kind: str) -> tuple[Options, ...]:
        """The options of the variants search level ``level`` adds on device type ``kind``."""
        return self.variants.get(level, {}).get(kind, ())


@runtime_checkable
class Backend(Protocol):
    """A backend config: a frozen dataclass with these members (see the module rules)."""

    declaration: ClassVar[Declaration]
    """What the backend's module declares (:class:`Declaration`)."""

    @property
    def name(self) -> str:
        """The backend's kind (``eager``, ``onnxruntime``, …), the same for every config."""
        ...

    @property
    def computes_in(self) -> str:
        """The precision it computes in: ``float32``, ``bfloat16``, ``float16`` or ``int8``."""
        ...

    @property
    def calibrated(self) -> bool:
        """Whether its artifact depends on the samples' values (the cache keys them too)."""
        ...

    def with_batch_range(self, max_batch_size: int) -> Backend:
        """This config with its ahead-of-time batch range set to ``1 … max_batch_size``
        (itself when it fixes no batch range ahead of time)."""
        ...

    def describe(self) -> str:
        """The name plus the fields that differ from their defaults."""
        ...

    def key(self) -> str:
        """A stable hash of the config's type and fields."""
        ...

    def unavailable_reason(self, device: torch.device) -> str | None:
        """``None`` when the backend can run on ``device``, else why not (cheap, no SDK)."""
        ...

    def build(
        self, module: torch.nn.Module, samples: Samples, device: torch.device, work_dir: Path
    ) -> IOResult[Built, BackendFailure]:
        """Build a runner for ``module``; a backend problem is a failure at stage ``build``."""
        ...


_MISSING = type(dataclasses.MISSING)
"""Told apart by type, not identity: a config class pickled by value (a user's backend
sent to a worker) gets copies of ``dataclasses.MISSING`` in its fields."""


def describe_config(config: Any) -> str:
    """``name`` or ``name(field=value, …)`` showing only non-default, non-name fields."""
    parts = []
    for f in dataclasses.fields(config):
        if f.name == "name":
            continue
        value = getattr(config, f.name)
        default = None if isinstance(f.default, _MISSING) else f.default
        factory: Any = f.default_factory
        if not isinstance(factory, _MISSING):
            default = factory()
        if value != default:
            parts.append(f"{f.name}={value!r}")
    name = str(config.name)
    return f"{name}({', '.join(parts)})" if parts else name


def config_key(config: Any) -> str:
    """A stable 16-hex-digit hash of the config's type and fields (a ``keyed_when_set``
    field left unset left out: :mod:`._runtime_fields`)."""
    values = dataclasses.asdict(config)
    kept = {f.name: values[f.name] for f in keyed_fields(config)}
    payload = {"type": type(config).__qualname__, **kept}
    blob = json.dumps(payload, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


class ConfigIdentity:
    """``describe()`` and ``key()`` for a frozen backend config, derived from its fields,
    and the plain defaults of the rest of :class:`Backend`: an empty declaration, float32,
    not calibrated, no ahead-of-time batch range. A backend overrides what differs.

    Mixed into a frozen slotted dataclass; it holds no state (``__slots__ = ()``), so the
    config stays slotted; ``declaration`` is a class variable, never a field, so it is not
    part of ``key()``.

    >>> @dataclass(frozen=True, slots=True)
    ... class Demo(ConfigIdentity):
    ...     level: int = 1
    ...     name: str = field(default="demo", init=False)
    >>> Demo().describe(), Demo(level=3).describe(), Demo().key() == Demo(level=1).key()
    ('demo', 'demo(level=3)', True)
    """

    __slots__ = ()
    declaration: ClassVar[Declaration] = Declaration()

    @property
    def computes_in(self) -> str:
        """float32 unless the backend says otherwise."""
        return "float32"

    @property
    def calibrated(self) -> bool:
        """Not calibrated unless the backend says otherwise."""
        return False

    def with_batch_range(self, max_batch_size: int) -> Backend:
        """Itself: no batch range fixed ahead of time unless the backend says otherwise."""
        return self  # type: ignore[return-value]

    def describe(self) -> str:
        """The config's name plus the fields that differ from their defaults."""
        return describe_config(self)

    def key(self) -> str:
        """A stable hash of the config's type and fields."""
        return config_key(self)
