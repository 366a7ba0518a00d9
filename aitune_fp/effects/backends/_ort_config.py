"""What an ONNX Runtime config may hold, checked once when the config is made.

Rules: the provider is ``auto`` or one of :data:`PROVIDERS`; graph optimisation and execution
mode are ONNX Runtime's names (:data:`~._ort_session.OPT_LEVELS`,
:data:`~._ort_session.EXECUTION_MODES`); threads >= 0 and ``max_batch_size`` >= 1; ``fp16``
only for the TensorRT and CUDA providers; an ``opt_batch_size`` only for the TensorRT
provider (its profile's opt shape), within 1 … ``max_batch_size``; the precision float32 or
a quantized one (:data:`~.ort_quant.QUANTIZED`). The first problem is one line
(:func:`config_problem`); the config raises it as a ``ValueError``.
"""

from __future__ import annotations

from typing import Any

from aitune_fp.effects.backends._ort_session import EXECUTION_MODES, OPT_LEVELS
from aitune_fp.effects.backends.ort_quant import QUANTIZED

PROVIDERS = {
    "cpu": "CPUExecutionProvider",
    "cuda": "CUDAExecutionProvider",
    "tensorrt": "TensorrtExecutionProvider",
}


def config_problem(config: Any) -> str | None:
    """The first rule ``config`` (an ``OnnxRuntime``) breaks, or None (see the rules).

    >>> from types import SimpleNamespace as Config
    >>> ok = dict(provider="tensorrt", graph_optimization="all", execution_mode="sequential",
    ...           intra_op_threads=0, max_batch_size=8, fp16=False, opt_batch_size=None,
    ...           opt_batch=8, precision="float32")
    >>> config_problem(Config(**ok)) is None
    True
    >>> config_problem(Config(**{**ok, "provider": "cpu", "opt_batch_size": 1}))
    'opt_batch_size applies to the TensorRT provider only'
    """
    choices = ("auto", *PROVIDERS)
    if config.provider not in choices:
        return f"onnxruntime provider must be one of {choices}, got {config.provider!r}"
    if config.graph_optimization not in OPT_LEVELS:
        return (
            f"graph_optimization must be one of {tuple(OPT_LEVELS)}, "
            f"got {config.graph_optimization!r}"
        )
    if config.execution_mode not in EXECUTION_MODES:
        return (
            f"execution_mode must be one of {tuple(EXECUTION_MODES)}, got {config.execution_mode!r}"
        )
    if config.intra_op_threads < 0 or config.max_batch_size < 1:
        return "intra_op_threads must be >= 0 and max_batch_size >= 1"
    if config.fp16 and config.provider not in ("tensorrt", "cuda"):
        return "fp16 applies to the TensorRT and CUDA providers only"
    return _batch_problem(config) or _precision_problem(config.precision)


def _batch_problem(config: Any) -> str | None:
    if config.opt_batch_size is not None and config.provider != "tensorrt":
        return "opt_batch_size applies to the TensorRT provider only"
    if not 1 <= config.opt_batch <= config.max_batch_size:
        return (
            "need 1 <= opt_batch_size <= max_batch_size, "
            f"got {config.opt_batch_size} and {config.max_batch_size}"
        )
    return None


def _precision_problem(precision: str) -> str | None:
    if precision not in ("float32", *QUANTIZED):
        return f"precision must be float32 or one of {QUANTIZED}"
    return None
