"""The candidate set a :class:`~aitune_fp.core.accuracy.Search` stands for on a device.

Rules (the measurements behind them are in ``docs/precision.md``):
- ``none``: today's fp32 candidates (:func:`~.registry.default_backends`);
- ``default`` adds the variants that moved a pick on the demo or BERT-like models: on CPU
  eager in bfloat16 (cast: faster than autocast where bf16 is native) and ONNX Runtime
  with dynamic int8 quantization; on CUDA eager in float16 and bfloat16 and the fp16
  builds of TensorRT, Torch-TensorRT and ONNX Runtime's TensorRT provider;
- ``wide`` adds, on CPU, eager bf16 under autocast, ONNX Runtime with static QDQ int8
  calibrated on the samples, and ONNX Runtime at one intra-op thread; on CUDA eager bf16
  under autocast;
- a variant that cannot run here (no native bf16, no CUDA) stays in the set and fails at
  build with its reason, so the run record says what was not tried;
- ``precisions`` keeps only the candidates computing in those precisions
  (:func:`precision_of`).
"""

from __future__ import annotations

import torch

from aitune_fp.core.accuracy.search import Search
from aitune_fp.effects.backends.base import Backend
from aitune_fp.effects.backends.eager import TorchEager
from aitune_fp.effects.backends.ort import OnnxRuntime
from aitune_fp.effects.backends.registry import default_backends
from aitune_fp.effects.backends.torch_trt import TorchTensorRT
from aitune_fp.effects.backends.trt import TensorRT


def precision_of(backend: Backend) -> str:
    """The precision a config computes in: ``float32``, ``bfloat16``, ``float16``, ``int8``.

    >>> precision_of(OnnxRuntime(precision="int8-static")), precision_of(TensorRT(fp16=True))
    ('int8', 'float16')
    >>> precision_of(TorchEager())
    'float32'
    """
    precision = str(getattr(backend, "precision", "float32"))
    if precision.startswith("int8"):
        return "int8"
    if getattr(backend, "fp16", False):
        return "float16"
    return precision


def _variants(level: str, kind: str) -> tuple[Backend, ...]:
    if level == "none":
        return ()
    if kind == "cpu":
        default: tuple[Backend, ...] = (
            TorchEager(precision="bfloat16"),
            OnnxRuntime(precision="int8-dynamic"),
        )
        wide: tuple[Backend, ...] = (
            TorchEager(precision="bfloat16", autocast=True),
            OnnxRuntime(precision="int8-static"),
            OnnxRuntime(intra_op_threads=1),
        )
    elif kind == "cuda":
        default = (
            TorchEager(precision="float16"),
            TorchEager(precision="bfloat16"),
            OnnxRuntime(provider="tensorrt", fp16=True),
            TensorRT(fp16=True),
            TorchTensorRT(fp16=True),
        )
        wide = (TorchEager(precision="bfloat16", autocast=True),)
    else:
        return ()
    return default + (wide if level == "wide" else ())


def search_candidates(search: Search, device: torch.device | str) -> tuple[Backend, ...]:
    """The candidates of ``search`` on ``device`` (eager fp32 excluded: it is the baseline).

    >>> [b.describe() for b in search_candidates(Search(), "cpu")]  # doctest: +NORMALIZE_WHITESPACE
    ['inductor', 'aot_inductor', 'onnxruntime', "eager(precision='bfloat16')",
     "onnxruntime(precision='int8-dynamic')"]
    >>> [b.describe() for b in search_candidates(Search("none"), "cpu")]
    ['inductor', 'aot_inductor', 'onnxruntime']
    >>> narrow = Search("wide", frozenset({"int8"}))
    >>> [b.describe() for b in search_candidates(narrow, "cpu")]
    ["onnxruntime(precision='int8-dynamic')", "onnxruntime(precision='int8-static')"]
    """
    kind = torch.device(device).type
    every = (*default_backends(device), *_variants(search.level, kind))
    return tuple(b for b in every if search.admits(precision_of(b)))


def narrowed(search: Search, backends: tuple[Backend, ...]) -> tuple[Backend, ...]:
    """``backends`` (a user's list) kept to the search's precisions."""
    return tuple(b for b in backends if search.admits(precision_of(b)))
