"""Reduced floating precision for torch-run backends: is it native here, and how to run it.

Rules:
- ``bfloat16``/``float16`` on a CPU count as available only where oneDNN says the CPU
  computes them natively (AVX512-BF16/AMX, AVX512-FP16/AMX-FP16); elsewhere they are
  emulated and several times slower than float32 (measured 6× for bf16 on an AVX2 CPU, a
  BERT-like model, ``docs/precision.md``), so the variant is a recorded failure with that
  reason; on CUDA, bfloat16 needs ``torch.cuda.is_bf16_supported()``;
- ``cast`` computes on a copy of the module cast to the dtype, floating inputs cast in
  and floating outputs cast back to eager's dtypes (:class:`~._precision.ComputeIn`);
  ``autocast`` runs the float32 module under ``torch.autocast`` (matmuls and convolutions
  in the dtype, reductions in float32) and casts floating outputs back the same way.
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
        if precision == "bfloat16" and not torch.cuda.is_bf16_supported():
            return "this GPU has no native bfloat16"
        return None
    check = {
        "bfloat16": torch.ops.mkldnn._is_mkldnn_bf16_supported,
        "float16": torch.ops.mkldnn._is_mkldnn_fp16_supported,
    }[precision]
    if device.type == "cpu" and not check():
        return (
            f"this CPU has no native {precision} (no AVX512/AMX support for it): it would be "
            "emulated, several times slower than float32"
        )
    return None


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
