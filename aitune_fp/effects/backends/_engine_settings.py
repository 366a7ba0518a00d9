"""Precision and batch-profile settings of a TensorRT-based engine, as one value.

Rules:
- an engine's optimisation profile spans batch ``1`` (min), ``opt_batch`` (opt:
  ``opt_batch_size``, or ``max_batch_size`` when unset) and ``max_batch_size`` (max), and
  ``1 <= opt_batch <= max_batch_size`` is checked when the value is made;
- ``fp16`` lets the engine use half precision, ``bf16`` bfloat16 (not both: a
  ``ValueError``); TF32 is used only with ``tf32``; the
  requested precision is the least precise arithmetic allowed (what an engine really got
  is read back from it, see :mod:`._precision`);
- a backend config *has* these settings (its ``engine`` property builds the value from its
  own flat fields) rather than inheriting them, so its fields, ``describe()``, run-record
  config dict and cache key stay exactly what they were; :class:`EngineConfig` gives such
  a config (TensorRT's, Torch-TensorRT's) the properties read from that value, once.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Protocol, Self, TypeVar


class _Ranged(Protocol):
    """An engine config with an optimisation batch size."""

    @property
    def opt_batch_size(self) -> int | None: ...


_C = TypeVar("_C", bound=_Ranged)


@dataclass(frozen=True, slots=True)
class EngineSettings:
    """The engine's precision flags and batch range.

    >>> EngineSettings(max_batch_size=64).opt_batch, EngineSettings(tf32=True).precision
    (64, 'tf32')
    >>> EngineSettings(bf16=True).precision
    'bfloat16'
    >>> EngineSettings(max_batch_size=8, opt_batch_size=16)
    Traceback (most recent call last):
    ...
    ValueError: need 1 <= opt_batch_size <= max_batch_size, got 16 and 8
    """

    fp16: bool = False
    tf32: bool = False
    max_batch_size: int = 1024
    opt_batch_size: int | None = None
    bf16: bool = False

    def __post_init__(self) -> None:
        if self.fp16 and self.bf16:
            raise ValueError("fp16 and bf16 are exclusive: choose one reduced precision")
        if not 1 <= self.opt_batch <= self.max_batch_size:
            raise ValueError(
                "need 1 <= opt_batch_size <= max_batch_size, "
                f"got {self.opt_batch_size} and {self.max_batch_size}"
            )

    @property
    def opt_batch(self) -> int:
        """The batch size the profile is tuned for."""
        return self.opt_batch_size if self.opt_batch_size is not None else self.max_batch_size

    @property
    def precision(self) -> str:
        """The least precise arithmetic the engine may use."""
        if self.fp16 or self.bf16:
            return "float16" if self.fp16 else "bfloat16"
        return "tf32" if self.tf32 else "float32"


def batch_range(config: _C, max_batch_size: int) -> _C:
    """``config`` (a frozen dataclass with ``max_batch_size`` and ``opt_batch_size``) with
    its engines' batch range set: an optimisation batch size above it is lowered to it.

    >>> @dataclass(frozen=True)
    ... class Engine:
    ...     max_batch_size: int | None = None
    ...     opt_batch_size: int | None = None
    >>> batch_range(Engine(opt_batch_size=64), 16), batch_range(Engine(opt_batch_size=8), 16)
    (Engine(max_batch_size=16, opt_batch_size=16), Engine(max_batch_size=16, opt_batch_size=8))
    """
    opt = config.opt_batch_size
    lowered = opt if opt is None or opt <= max_batch_size else max_batch_size
    return dataclasses.replace(config, max_batch_size=max_batch_size, opt_batch_size=lowered)  # type: ignore[type-var]


class EngineConfig:
    """The engine-derived properties of a frozen slotted backend config with the flat
    fields ``fp16``, ``tf32``, ``max_batch_size``, ``opt_batch_size`` and ``bf16`` (mixed in
    before :class:`~aitune_fp.effects.backends.base.ConfigIdentity`; no state of its own).

    >>> @dataclass(frozen=True, slots=True)
    ... class Engine(EngineConfig):
    ...     fp16: bool = False
    ...     tf32: bool = False
    ...     max_batch_size: int = 1024
    ...     opt_batch_size: int | None = None
    ...     bf16: bool = False
    >>> Engine(bf16=True).computes_in, Engine(opt_batch_size=64).with_batch_range(16).opt_batch
    ('bfloat16', 16)
    """

    __slots__ = ()
    fp16: bool
    tf32: bool
    max_batch_size: int
    opt_batch_size: int | None
    bf16: bool

    @property
    def engine(self) -> EngineSettings:
        """This config's precision and batch-range settings, as one value."""
        return EngineSettings(
            self.fp16, self.tf32, self.max_batch_size, self.opt_batch_size, self.bf16
        )

    @property
    def opt_batch(self) -> int:
        """The batch size the optimisation profile is tuned for."""
        return self.engine.opt_batch

    @property
    def precision(self) -> str:
        """The requested precision (the least precise arithmetic allowed)."""
        return self.engine.precision

    @property
    def computes_in(self) -> str:
        """Its requested precision (``float16``, ``bfloat16``, ``tf32`` or ``float32``)."""
        return self.precision

    def with_batch_range(self, max_batch_size: int) -> Self:
        """The engines' batch range set (an optimisation batch above it lowered to it)."""
        return batch_range(self, max_batch_size)
