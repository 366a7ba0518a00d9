"""Reduced precision that works on TensorRT 10 and 11, and reading back what an engine got.

Rules:
- the mechanism is chosen from the API the installed TensorRT offers, never from the
  request alone: with ``BuilderFlag.FP16`` (TensorRT 10.x; ``BuilderFlag.BF16`` for a
  bf16 request) the request sets that flag on the fp32 network (``builder_flag``);
  without it (TensorRT 11.x removed the precision flags; every network is strongly
  typed) the module is wrapped by :class:`ComputeIn`, which computes in float16 (or
  bfloat16) between casts that keep the eager input and output dtypes, and
  the engine is built from that typed network (``strongly_typed_cast``); the
  ``STRONGLY_TYPED`` creation flag is set then where it exists (required on 10.x, accepted
  and ignored on 11.x);
- TF32 is cleared unless asked for, where the flag exists;
- the effective precision is read back from the built engine: the data types of its layers
  from the engine inspector's JSON (10.x ``Format/Datatype``, 11.x ``DataType``), else of
  its I/O tensors; the least precise floating type found is the engine's precision
  (``tf32`` stands for ``float32`` when TF32 was allowed).
"""

from __future__ import annotations

import copy
import inspect
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.utils._pytree as pytree

from aitune_fp.effects.backends._versions import parse_version

_DTYPE_KEYS = re.compile(r'"(?:Format/Datatype|Format/DataType|DataType|Datatype)"\s*:\s*"([^"]*)"')


@dataclass(frozen=True, slots=True)
class TrtPrecisionPlan:
    """How one TensorRT build gets the requested precision.

    >>> TrtPrecisionPlan("11.0.0", "strongly_typed_cast", "float16", ("STRONGLY_TYPED",),
    ...                  (), ("TF32",), torch.float16).generation
    11
    """

    version: str
    mechanism: str
    requested: str
    network_flags: tuple[str, ...]
    set_flags: tuple[str, ...]
    clear_flags: tuple[str, ...]
    cast_to: torch.dtype | None

    @property
    def generation(self) -> int:
        """TensorRT's major version (0 when unknown)."""
        parsed = parse_version(self.version)
        return parsed[0] if parsed else 0


_LOW: dict[str, tuple[str, torch.dtype]] = {
    "float16": ("FP16", torch.float16),
    "bfloat16": ("BF16", torch.bfloat16),
}


def trt_precision_plan(trt: Any, *, fp16: bool, tf32: bool, bf16: bool = False) -> TrtPrecisionPlan:
    """The plan for ``fp16``/``bf16``/``tf32`` on the TensorRT module ``trt`` (real or
    a fake); ``fp16`` and ``bf16`` together are a ``ValueError``."""
    if fp16 and bf16:
        raise ValueError("fp16 and bf16 are exclusive: choose one reduced precision")
    flags = trt.BuilderFlag
    clear = ("TF32",) if not tf32 and hasattr(flags, "TF32") else ()
    low = "float16" if fp16 else "bfloat16" if bf16 else None
    requested = low or ("tf32" if tf32 else "float32")
    version = str(getattr(trt, "__version__", ""))
    if low is None:
        return TrtPrecisionPlan(version, "none", requested, (), (), clear, None)
    flag, dtype = _LOW[low]
    if hasattr(flags, flag):
        return TrtPrecisionPlan(version, "builder_flag", requested, (), (flag,), clear, None)
    typed: tuple[str, ...] = ("STRONGLY_TYPED",)
    if not hasattr(trt.NetworkDefinitionCreationFlag, "STRONGLY_TYPED"):
        typed = ()
    return TrtPrecisionPlan(version, "strongly_typed_cast", requested, typed, (), clear, dtype)


def network_flags(trt: Any, plan: TrtPrecisionPlan) -> int:
    """The ``create_network`` bit mask for the plan's creation flags."""
    mask = 0
    for name in plan.network_flags:
        mask |= 1 << int(getattr(trt.NetworkDefinitionCreationFlag, name))
    return mask


def configure(trt: Any, config: Any, plan: TrtPrecisionPlan) -> None:
    """Set and clear the plan's builder flags; ask for per-layer detail for the read-back."""
    for name in plan.set_flags:
        config.set_flag(getattr(trt.BuilderFlag, name))
    for name in plan.clear_flags:
        config.clear_flag(getattr(trt.BuilderFlag, name))
    if hasattr(trt, "ProfilingVerbosity") and hasattr(trt.ProfilingVerbosity, "DETAILED"):
        config.profiling_verbosity = trt.ProfilingVerbosity.DETAILED


def _kind(text: str) -> str | None:
    """The floating kind a TensorRT data-type text names (``Half``/``FP16`` → float16, …).

    >>> [_kind(t) for t in ("Half", "Row major linear FP16 format (kLINEAR)", "BFloat16",
    ...                     "Float", "FP32", "Int32")]
    ['float16', 'float16', 'bfloat16', 'float32', 'float32', None]
    """
    low = text.lower()
    if "bfloat16" in low or "bf16" in low:
        return "bfloat16"
    if "half" in low or "fp16" in low or "float16" in low:
        return "float16"
    if "float" in low or "fp32" in low:
        return "float32"
    return None


def least_precise(kinds: Sequence[str | None], tf32: bool) -> str | None:
    """The least precise floating type among ``kinds`` (None when there is none).

    >>> least_precise(["float32", None, "float16"], tf32=False), least_precise(["float32"], True)
    ('float16', 'tf32')
    """
    found = {k for k in kinds if k is not None}
    for kind in ("float16", "bfloat16"):
        if kind in found:
            return kind
    if "float32" in found:
        return "tf32" if tf32 else "float32"
    return None


def layer_types(info_json: str) -> list[str | None]:
    """The floating kinds of every data type named in an engine inspector's JSON.

    >>> layer_types('{"Layers": [{"Outputs": [{"Format/Datatype": "Half"}]}]}')
    ['float16']
    """
    return [_kind(v) for v in _DTYPE_KEYS.findall(info_json)]


def engine_precision(trt: Any, engine: Any, *, tf32: bool) -> tuple[str | None, str]:
    """``(precision, source)`` read from a built engine: its layers, else its I/O tensors."""
    try:
        inspector = engine.create_engine_inspector()
        text = inspector.get_engine_information(trt.LayerInformationFormat.JSON)
        json.loads(text)
    except Exception:
        text = ""
    kinds = layer_types(text)
    if least_precise(kinds, tf32) is not None:
        return least_precise(kinds, tf32), "engine_layers"
    names = [engine.get_tensor_name(i) for i in range(engine.num_io_tensors)]
    io = [_kind(str(engine.get_tensor_dtype(n)).rsplit(".", 1)[-1]) for n in names]
    return least_precise(io, tf32), "io_tensors"


def _cast_leaf(dtype: torch.dtype) -> Any:
    def cast(t: Any) -> Any:
        return t.to(dtype) if isinstance(t, torch.Tensor) and t.is_floating_point() else t

    return cast


class ComputeIn(torch.nn.Module):
    """``module`` computing in ``dtype``: floating inputs are cast to it, floating outputs
    back to the eager dtypes ``output_dtypes`` (in pytree leaf order), integers untouched.
    The wrapped copy is cast; the caller's module is left as it is."""

    def __init__(
        self, module: torch.nn.Module, dtype: torch.dtype, output_dtypes: Sequence[torch.dtype]
    ) -> None:
        super().__init__()
        self.inner = copy.deepcopy(module).to(dtype)
        self.dtype = dtype
        self.output_dtypes = tuple(output_dtypes)
        self.signature = inspect.signature(module.forward)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The module's call, computed in ``dtype``, returned in the eager dtypes."""
        to_low = _cast_leaf(self.dtype)
        out = self.inner(*pytree.tree_map(to_low, args), **pytree.tree_map(to_low, kwargs))
        leaves, spec = pytree.tree_flatten(out)
        dtypes = iter(self.output_dtypes)
        back = [t.to(next(dtypes)) if isinstance(t, torch.Tensor) else t for t in leaves]
        return pytree.tree_unflatten(back, spec)


def output_dtypes(outputs: Any) -> tuple[torch.dtype, ...]:
    """The dtype of every tensor leaf of an eager output, in pytree order."""
    return tuple(t.dtype for t in pytree.tree_leaves(outputs) if isinstance(t, torch.Tensor))
