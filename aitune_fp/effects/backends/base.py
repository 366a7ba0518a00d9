"""What every backend is: a frozen config plus an effect that builds a runner.

Rules:
- a backend config is a frozen dataclass; ``describe()`` shows its name and only the
  fields that differ from their defaults; ``key()`` is a stable hash of the config (both
  come from :class:`ConfigIdentity`, which every shipped config mixes in);
- ``unavailable_reason(device)`` is cheap and side-effect free: ``None`` when the backend
  can run on ``device``, else a human reason ("tensorrt is not installed", "needs a CUDA
  device");
- ``build(...)`` returns ``IOResult[Built, BackendFailure]`` with stage ``build``; it never
  raises for a backend problem and writes its full log under ``work_dir/build.log``;
- an inference SDK is imported only inside its own backend module, lazily, in ``build`` or
  ``unavailable_reason``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import torch
from returns.io import IOResult

from aitune_fp.core.records import BackendFailure
from aitune_fp.effects.inputs import Samples


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


@runtime_checkable
class Backend(Protocol):
    """A backend config: a frozen dataclass with these methods and a ``name``."""

    @property
    def name(self) -> str:
        """The backend's kind (``eager``, ``onnxruntime``, …), the same for every config."""
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


def describe_config(config: Any) -> str:
    """``name`` or ``name(field=value, …)`` showing only non-default, non-name fields."""
    parts = []
    for f in dataclasses.fields(config):
        if f.name == "name":
            continue
        value = getattr(config, f.name)
        default = f.default if f.default is not dataclasses.MISSING else None
        if f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        if value != default:
            parts.append(f"{f.name}={value!r}")
    name = str(config.name)
    return f"{name}({', '.join(parts)})" if parts else name


def config_key(config: Any) -> str:
    """A stable 16-hex-digit hash of the config's type and fields."""
    payload = {"type": type(config).__qualname__, **dataclasses.asdict(config)}
    blob = json.dumps(payload, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


class ConfigIdentity:
    """``describe()`` and ``key()`` for a frozen backend config, derived from its fields.

    Mixed into a frozen slotted dataclass; it holds no state (``__slots__ = ()``), so the
    config stays slotted.

    >>> @dataclass(frozen=True, slots=True)
    ... class Demo(ConfigIdentity):
    ...     level: int = 1
    ...     name: str = field(default="demo", init=False)
    >>> Demo().describe(), Demo(level=3).describe(), Demo().key() == Demo(level=1).key()
    ('demo', 'demo(level=3)', True)
    """

    __slots__ = ()

    def describe(self) -> str:
        """The config's name plus the fields that differ from their defaults."""
        return describe_config(self)

    def key(self) -> str:
        """A stable hash of the config's type and fields."""
        return config_key(self)
