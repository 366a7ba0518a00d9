"""Reduced floating precision for torch-run backends: is it native here, and how to run it.

Rules:
- ``bfloat16``/``float16`` on a CPU count as available only where oneDNN says the CPU
  computes them natively (AVX512-BF16/AMX, AVX512-FP16/AMX-FP16); elsewhere they are
  emulated and several times slower than float32 (measured 6× for bf16 on an AVX2 CPU, a
  BERT-like model, ``docs/precision.md``), so the variant is a recorded failure with that
  reason; on CUDA, bfloat16 needs the tuned GPU's compute capability 8.0 or later;
- ``cast`` computes on a copy of the module cast to the dtype, floating inputs cast in
  and floating outputs cast back to eager's dtypes (:class:`~._precision.ComputeIn`);
  ``autocast`` runs the float32 module under ``torch.autocast`` (matmuls and convolutions
  in the dtype, reductions in float32) and casts floating outputs back the same way;
- the same fields mean the same on every torch-run backend (eager, Inductor, AOTInductor:
  :func:`check_fields`); a compiler compiles what :func:`computing_in` returns, so the casts
  are part of the compiled program and ``load`` of a saved config rebuilds them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

import torch
import torch.utils._pytree as pytree

from aitune_fp.effects.backends._precision import ComputeIn

DTYPES: Final = {"bfloat16": torch.bfloat16, "float16": torch.float16}


def lowp_unavailable(precision: str, device: torch.device) -> str | None:
    """Why ``precision`` cannot run natively on ``device``, or None.

    >>> lowp_unavailable("float32", torch.device("cpu")) is None
    True
    """
    if precision not in DTYPES:
        return None
    if device.type == "cuda":
        if precision == "bfloat16" and not cuda_bf16_native(device):
            return "this GPU has no native bfloat16"
        return None
    return _cpu_unavailable(precision) if device.type == "cpu" else None


def _cpu_unavailable(precision: str) -> str | None:
    """Why this CPU cannot run ``precision`` (``bfloat16`` or ``float16``) natively, or None."""
    check = {
        "bfloat16": torch.ops.mkldnn._is_mkldnn_bf16_supported,
        "float16": torch.ops.mkldnn._is_mkldnn_fp16_supported,
    }[precision]
    if not check():
        return (
            f"this CPU has no native {precision} (no AVX512/AMX support for it): it would be "
            "emulated, several times slower than float32"
        )
    return None


def cuda_bf16_native(device: torch.device) -> bool:
    """Whether the tuned CUDA ``device`` computes bfloat16 natively: compute capability 8.0
    (Ampere) or later. ``torch.cuda.is_bf16_supported()`` is not that question: it
    defaults to ``including_emulation=True`` (true on older GPUs too, which emulate it
    slowly) and asks about the current device, not the tuned one."""
    major, _minor = torch.cuda.get_device_capability(device)
    return major >= 8


def check_fields(name: str, precision: str, autocast: bool) -> None:
    """Refuse a precision a torch-run backend does not know, or autocast in float32.

    >>> check_fields("inductor", "int8", False)
    Traceback (most recent call last):
    ...
    ValueError: inductor precision must be float32 or one of ('bfloat16', 'float16')
    """
    if precision not in ("float32", *DTYPES):
        raise ValueError(f"{name} precision must be float32 or one of {tuple(DTYPES)}")
    if autocast and precision == "float32":
        raise ValueError("autocast needs a reduced precision")


def io_cast_info(precision: str, autocast: bool) -> dict[str, object]:
    """What a build records about its precision (empty for float32).

    >>> io_cast_info("bfloat16", False)["io_cast"]
    'cast: floating inputs to bfloat16, outputs back'
    """
    if precision == "float32":
        return {}
    how = "autocast" if autocast else "cast"
    cast = f"{how}: floating inputs to {precision}, outputs back"
    return {"precision": precision, "io_cast": cast}


def _back(dtypes: Sequence[torch.dtype], outputs: Any) -> Any:
    leaves, spec = pytree.tree_flatten(outputs)
    wanted = iter(dtypes)
    cast = [t.to(next(wanted)) if isinstance(t, torch.Tensor) else t for t in leaves]
    return pytree.tree_unflatten(cast, spec)


def low_precision(
    module: torch.nn.Module, precision: str, autocast: bool, output_dtypes: Sequence[torch.dtype]
) -> Callable[..., Any]:
    """``module`` computing in ``precision`` (cast or autocast), eager's output dtypes kept."""
    dtype = DTYPES[precision]
    if not autocast:
        return ComputeIn(module, dtype, output_dtypes).eval()
    kind = next((p.device.type for p in module.parameters()), "cpu")
    dtypes = tuple(output_dtypes)

    def run(*args: Any, **kwargs: Any) -> Any:
        with torch.autocast(kind, dtype=dtype):
            out = module(*args, **kwargs)
        return _back(dtypes, out)

    return run


def computing_in(
    model: torch.nn.Module, precision: str, autocast: bool, first: Callable[[Any], Any]
) -> Any:
    """What a compiler compiles for ``precision``: ``model`` itself in float32, else
    :func:`low_precision` of it with the output dtypes of ``first(model)`` (one eager call,
    made under inference mode)."""
    if precision == "float32":
        return model
    with torch.inference_mode():
        dtypes = [t.dtype for t in pytree.tree_leaves(first(model)) if isinstance(t, torch.Tensor)]
    return low_precision(model, precision, autocast, dtypes)
