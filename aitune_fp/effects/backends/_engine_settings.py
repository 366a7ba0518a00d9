"""Precision and batch-profile settings shared by the TensorRT-based backend configs.

Rules:
- an engine's optimisation profile spans batch ``1`` (min), ``opt_batch`` (opt:
  ``opt_batch_size``, or ``max_batch_size`` when unset) and ``max_batch_size`` (max), and
  ``1 <= opt_batch <= max_batch_size`` is checked once, at construction;
- ``fp16`` lets the engine use half precision; TF32 is used only with ``tf32``; the
  reported precision is the least precise arithmetic allowed.
"""

from __future__ import annotations


class EngineSettings:
    """``opt_batch``, ``precision`` and the batch-range check for a TensorRT-based config.

    Mixed into a frozen slotted dataclass that has the four fields annotated below; it
    holds no state of its own (``__slots__ = ()``).
    """

    __slots__ = ()

    fp16: bool
    tf32: bool
    max_batch_size: int
    opt_batch_size: int | None

    @property
    def opt_batch(self) -> int:
        """The batch size the profile is tuned for."""
        return self.opt_batch_size if self.opt_batch_size is not None else self.max_batch_size

    @property
    def precision(self) -> str:
        """The least precise arithmetic the engine may use."""
        return "float16" if self.fp16 else "tf32" if self.tf32 else "float32"

    def check_batch_range(self) -> None:
        """Raise ``ValueError`` unless ``1 <= opt_batch <= max_batch_size``."""
        if not 1 <= self.opt_batch <= self.max_batch_size:
            raise ValueError(
                "need 1 <= opt_batch_size <= max_batch_size, "
                f"got {self.opt_batch_size} and {self.max_batch_size}"
            )
