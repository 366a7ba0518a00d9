"""The TF32 policy of validation: the eager reference is strict float32, each candidate is
judged at the precision it really computes in.

Rules:
- torch's own float32 arithmetic on CUDA follows two switches, matmuls and convolutions
  (``"ieee"``, ``"tf32"``, ``"bf16"``), read and set through the legacy API
  (``torch.backends.cuda.matmul.allow_tf32``, ``torch.get_float32_matmul_precision()``,
  ``torch.backends.cudnn.allow_tf32``) unless the user set torch's new ``fp32_precision``
  API (2.9 and later), after which torch refuses legacy reads: then through the new one
  (torch also refuses them while its legacy and new settings disagree, so aitune_fp never
  mixes the two); by default matmuls are strict and convolutions **TF32**; on other
  devices the switches do nothing;
- the eager reference every candidate is compared with is computed under
  :func:`strict_fp32` (both switches ``"ieee"``, restored afterwards), so it is
  never itself TF32: a TF32 reference would make correct strict-fp32 engines (TensorRT,
  ONNX Runtime, Torch-TensorRT without ``tf32``) fail a float32 bound on a conv model, and
  would hide their errors under a looser one;
- a candidate that declares its precision (``Built.info["precision"]``: TensorRT, ONNX
  Runtime, Torch-TensorRT) is judged at it; one that computes with torch's own kernels
  and declares none (eager, Inductor, AOTInductor) is judged at :func:`torch_precision`,
  what those switches allow on its device at validation time, which is also what it ran
  with when it was built and timed;
- the switches as they were are recorded with each validation (``tf32_matmul``,
  ``tf32_cudnn``: 1 when not strict, ``reference_strict_fp32`` = 1).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

import torch


@dataclass(frozen=True, slots=True)
class Tf32Switches:
    """torch's float32 arithmetic for matmuls and convolutions: ``ieee``, ``tf32``, ``bf16``."""

    matmul: str = "ieee"
    conv: str = "tf32"

    @classmethod
    def now(cls) -> Tf32Switches:
        """The switches as torch has them now (legacy flags, or the new API when a user
        set that one: then the legacy flags raise when read)."""
        legacy = _legacy_flags()
        if legacy is not None:
            allow_matmul, allow_conv, highest = legacy
            matmul = (
                "bf16"
                if highest == "medium"
                else "tf32"
                if allow_matmul or highest == "high"
                else "ieee"
            )
            return cls(matmul, "tf32" if allow_conv else "ieee")
        top = str(getattr(torch.backends, "fp32_precision", "none"))

        def effective(value: str, default: str) -> str:
            return value if value != "none" else top if top != "none" else default

        return cls(
            effective(torch.backends.cuda.matmul.fp32_precision, "ieee"),
            effective(_cudnn_conv().fp32_precision, "tf32"),
        )

    def precision(self, device_type: str) -> str:
        """The least precise float32 arithmetic torch's kernels may use on ``device_type``.

        >>> Tf32Switches().precision("cuda"), Tf32Switches().precision("cpu")
        ('tf32', 'float32')
        >>> Tf32Switches("bf16", "ieee").precision("cuda"), Tf32Switches("ieee", "ieee").precision(
        ...     "cuda")
        ('bfloat16', 'float32')
        """
        kinds = {self.matmul, self.conv}
        if device_type != "cuda" or kinds == {"ieee"}:
            return "float32"
        return "bfloat16" if "bf16" in kinds else "tf32"

    def as_record(self) -> dict[str, float]:
        """The switches as validation record numbers.

        >>> Tf32Switches().as_record()
        {'tf32_matmul': 0.0, 'tf32_cudnn': 1.0, 'reference_strict_fp32': 1.0}
        """
        return {
            "tf32_matmul": float(self.matmul != "ieee"),
            "tf32_cudnn": float(self.conv != "ieee"),
            "reference_strict_fp32": 1.0,
        }


DEFAULT_SWITCHES: Final = Tf32Switches()
"""torch's defaults: strict matmuls, TF32 convolutions."""


def _cudnn_conv() -> Any:
    """``torch.backends.cudnn.conv`` (torch 2.9 and later)."""
    return getattr(torch.backends.cudnn, "conv", None)


def _legacy_flags() -> tuple[bool, bool, str] | None:
    """``(matmul allow_tf32, cudnn allow_tf32, float32 matmul precision)``, or ``None`` when
    torch refuses to read them (a user set the new ``fp32_precision`` API: reading the
    legacy flags then raises "a mix of the legacy and new APIs")."""
    try:
        return (
            bool(torch.backends.cuda.matmul.allow_tf32),
            bool(torch.backends.cudnn.allow_tf32),
            torch.get_float32_matmul_precision(),
        )
    except RuntimeError:
        return None


def torch_precision(device: torch.device) -> str:
    """The precision torch's own kernels compute float32 in on ``device`` now."""
    return Tf32Switches.now().precision(device.type)


def candidate_precision(declared: object, device: torch.device) -> str | None:
    """The precision a candidate is judged at: the one it declares, else torch's own when
    that is less precise than float32 (``None``: the outputs' own dtypes decide).

    >>> candidate_precision("float16", torch.device("cuda"))
    'float16'
    >>> candidate_precision(None, torch.device("cpu")) is None
    True
    """
    if isinstance(declared, str):
        return declared
    own = torch_precision(device)
    return None if own == "float32" else own


STRICT: Final = Tf32Switches("ieee", "ieee")
"""No TF32 anywhere: what the eager reference is computed under."""


@contextlib.contextmanager
def strict_fp32() -> Iterator[None]:
    """While open, torch computes float32 strictly (no TF32 matmuls or convolutions).

    >>> before = Tf32Switches.now()
    >>> with use_switches(Tf32Switches(matmul="tf32", conv="tf32")):
    ...     with strict_fp32():
    ...         inside = Tf32Switches.now()
    ...     outside = Tf32Switches.now()
    >>> inside == STRICT, outside == Tf32Switches(matmul="tf32", conv="tf32")
    (True, True)
    >>> Tf32Switches.now() == before
    True
    """
    with use_switches(STRICT):
        yield


@contextlib.contextmanager
def use_switches(switches: Tf32Switches) -> Iterator[None]:
    """While open, torch's float32 switches are ``switches`` (restored afterwards), set
    through the API the user's torch is on: the legacy flags unless they cannot be read
    (then ``fp32_precision`` of cuBLAS matmuls and of cuDNN convolutions and RNNs alike,
    since torch refuses legacy reads once those disagree)."""
    legacy = _legacy_flags()
    if legacy is None:
        nodes = (torch.backends.cuda.matmul, _cudnn_conv(), torch.backends.cudnn.rnn)
        saved = tuple(n.fp32_precision for n in nodes)
        wanted = (switches.matmul, switches.conv, switches.conv)
        try:
            for node, value in zip(nodes, wanted, strict=True):
                node.fp32_precision = value
            yield
        finally:
            for node, value in zip(nodes, saved, strict=True):
                node.fp32_precision = value
        return
    allow_matmul, allow_conv, highest = legacy
    try:
        _set_legacy(switches.matmul != "ieee", switches.conv != "ieee", _MATMUL[switches.matmul])
        yield
    finally:
        _set_legacy(allow_matmul, allow_conv, highest)


_MATMUL: Final = {"ieee": "highest", "tf32": "high", "bf16": "medium"}
"""``torch.set_float32_matmul_precision``'s word for each matmul switch."""


def _set_legacy(allow_matmul: bool, allow_conv: bool, matmul_precision: str) -> None:
    """Set torch's legacy float32 switches, the matmul precision last: ATen's
    ``setAllowTF32CuBLAS(b)`` (behind ``torch.backends.cuda.matmul.allow_tf32 = b``) sets
    the float32 matmul precision to HIGH or HIGHEST (``aten/src/ATen/Context.cpp``), so
    setting the precision first would turn a ``"medium"`` into ``"high"``.

    >>> before = torch.get_float32_matmul_precision()
    >>> _set_legacy(True, True, "medium")
    >>> torch.get_float32_matmul_precision(), torch.backends.cuda.matmul.allow_tf32
    ('medium', True)
    >>> _set_legacy(False, True, before)
    """
    torch.backends.cuda.matmul.allow_tf32 = allow_matmul
    torch.backends.cudnn.allow_tf32 = allow_conv
    torch.set_float32_matmul_precision(matmul_precision)
