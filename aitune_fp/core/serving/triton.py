"""A Triton model configuration (``config.pbtxt``) as text, from the tune's facts.

Rules:
- only a saved artifact Triton runs natively is exportable: an ONNX model
  (``onnxruntime_onnx``, ``model.onnx``), a TensorRT engine (``tensorrt_plan``,
  ``model.plan``) or an OpenVINO IR (Triton's ``openvino`` backend, ``model.xml`` and
  ``model.bin``); anything else is refused with one line saying why
  (:func:`triton_platform`);
- Triton batches along the first axis: every input and output must have its batch axis
  first; ``max_batch_size`` is the serving plan's maximum and ``dims`` leave the batch axis
  out (``-1`` for a dynamic axis); a tensor with no other axis gets ``dims: [ 1 ]`` and a
  ``reshape { shape: [ ] }``;
- ``dynamic_batching`` carries the plan's preferred batch sizes and its batch wait as
  ``max_queue_delay_microseconds``; ``instance_group`` is ``KIND_GPU`` on the tuned GPU,
  ``KIND_CPU`` otherwise, with the requested count.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from aitune_fp.core.serving.plan import ServingPlan
from aitune_fp.core.serving.schema import TensorSig

TRITON_TYPES: Final = {
    "bool": "TYPE_BOOL",
    "uint8": "TYPE_UINT8",
    "int8": "TYPE_INT8",
    "int16": "TYPE_INT16",
    "int32": "TYPE_INT32",
    "int64": "TYPE_INT64",
    "float16": "TYPE_FP16",
    "bfloat16": "TYPE_BF16",
    "float32": "TYPE_FP32",
    "float64": "TYPE_FP64",
}
PLATFORMS: Final = {
    "onnxruntime": ("onnxruntime_onnx", "model.onnx", ".onnx"),
    "tensorrt": ("tensorrt_plan", "model.plan", ".engine"),
    "openvino": ("openvino", "model.xml", ".xml"),
}
BACKENDS: Final = frozenset({"openvino"})
"""Runtimes Triton names as a ``backend`` (its OpenVINO backend: ``model.xml`` with its
weights ``model.bin`` in the version folder), not a ``platform``."""


class NotExportable(ValueError):
    """A saved model Triton cannot run as exported; the message is one line saying why."""


@dataclass(frozen=True, slots=True)
class TritonModel:
    """What a ``config.pbtxt`` says: the model's name, platform and file, its tensors
    (batch axis first, included in ``dims``), batching and instances."""

    name: str
    platform: str
    filename: str
    inputs: tuple[TensorSig, ...]
    outputs: tuple[TensorSig, ...]
    plan: ServingPlan
    gpus: tuple[int, ...] = ()
    count: int = 1


def triton_platform(kind: str, artifact: str | None) -> tuple[str, str]:
    """Triton's platform and model file name for a saved ``kind`` with ``artifact``.

    >>> triton_platform("onnxruntime", "model.onnx")
    ('onnxruntime_onnx', 'model.onnx')
    >>> try:
    ...     triton_platform("eager", None)
    ... except NotExportable as error:
    ...     print(str(error).split(";")[0])
    not exportable to Triton: eager was saved as a recipe (no artifact to load)
    """
    why = _why_not_exportable(kind, artifact)
    if why is not None:
        raise NotExportable(f"not exportable to Triton: {why}")
    platform, filename, _ = PLATFORMS[kind]
    return platform, filename


def _why_not_exportable(kind: str, artifact: str | None) -> str | None:
    """Why Triton cannot serve a saved ``kind`` (``None``: it can)."""
    if artifact is None:
        return f"{kind} was saved as a recipe (no artifact to load); serve it with aitune-fp serve"
    if kind == "aot_inductor":
        return (
            "an AOTInductor package needs Triton's Python backend with the torch build it was "
            "compiled by; serve it with aitune-fp serve"
        )
    if kind not in PLATFORMS:
        return f"no Triton platform runs a {kind} artifact"
    return None


def model_name(text: str) -> str:
    """A Triton model name from a folder name: letters, digits, ``-``, ``_`` and ``.``.

    >>> model_name("my model (v2)")
    'my_model_v2'
    """
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_.")
    return name or "model"


def _dims(sig: TensorSig) -> tuple[int, ...]:
    if not sig.dims or sig.dims[0] != -1:
        raise NotExportable(
            f"not exportable to Triton: {sig.name} has shape {list(sig.dims)}; Triton batches "
            "along the first axis"
        )
    return sig.dims[1:]


def _tensor(sig: TensorSig) -> str:
    if sig.dtype not in TRITON_TYPES:
        raise NotExportable(f"not exportable to Triton: {sig.name} has dtype {sig.dtype}")
    dims = _dims(sig)
    lines = [
        "  {",
        f'    name: "{sig.name}"',
        f"    data_type: {TRITON_TYPES[sig.dtype]}",
        f"    dims: [ {', '.join(str(d) for d in dims) if dims else '1'} ]",
    ]
    if not dims:
        lines.append("    reshape: { shape: [ ] }")
    return "\n".join([*lines, "  }"])


def _tensors(field: str, sigs: Sequence[TensorSig]) -> str:
    return f"{field} [\n" + ",\n".join(_tensor(s) for s in sigs) + "\n]"


def config_pbtxt(model: TritonModel) -> str:
    """The ``config.pbtxt`` text of ``model`` (see the module rules)."""
    plan = model.plan
    preferred = ", ".join(str(b) for b in plan.preferred_batch_sizes)
    kind = "KIND_GPU" if model.gpus else "KIND_CPU"
    gpus = f"\n    gpus: [ {', '.join(str(g) for g in model.gpus)} ]" if model.gpus else ""
    return "\n".join(
        [
            f"# written by aitune-fp export --triton: {plan.backend}, {plan.rule}",
            f'name: "{model.name}"',
            f'{"backend" if model.platform in BACKENDS else "platform"}: "{model.platform}"',
            f'default_model_filename: "{model.filename}"',
            f"max_batch_size: {plan.max_batch_size}",
            _tensors("input", model.inputs),
            _tensors("output", model.outputs),
            "dynamic_batching {",
            f"  preferred_batch_size: [ {preferred} ]",
            f"  max_queue_delay_microseconds: {plan.batch_wait_us}",
            "}",
            "instance_group [",
            "  {",
            f"    count: {model.count}",
            f"    kind: {kind}{gpus}",
            "  }",
            "]",
            "",
        ]
    )
