"""The candidate set a :class:`~aitune_fp.core.accuracy.Search` stands for on a device.

Rules (the measurements behind them are in ``docs/precision.md``; each variant is declared
by its backend, :class:`~.base.Declaration` ``variants``):
- ``none``: today's fp32 candidates (:func:`~.registry.default_backends`);
- ``default`` adds the variants that moved a pick on the demo or BERT-like models: on CPU
  eager in bfloat16 (cast: faster than autocast where bf16 is native), Inductor in
  bfloat16 with weight freezing (cast; the fastest accurate candidate on the BERT-like
  model), ONNX Runtime with dynamic int8 quantization and ONNX Runtime with basic graph
  optimisation (a runtime option: it reuses the export; 1.17× on the Transformer and
  BERT-like models at batch 16, quiet machine), OpenVINO in bfloat16 and OpenVINO int8
  (NNCF's post-training quantization calibrated on the seen rows); on CUDA eager in
  float16 and bfloat16, Inductor in float16, the fp16 builds of TensorRT, Torch-TensorRT
  and ONNX Runtime's TensorRT provider, and ONNX Runtime's CUDA provider on the graph
  converted to float16;
- ``wide`` adds, on CPU, eager and Inductor bf16 under autocast, AOTInductor bf16 with
  freezing, ONNX Runtime with static QDQ int8 calibrated on the samples, OpenVINO with
  NNCF's int8 weight-only compression, ONNX Runtime at one intra-op thread with and
  without basic graph optimisation (they won only on a busy machine or at batch 1), and
  eager at one torch thread; on CUDA
  eager bf16 under autocast, Inductor bf16, AOTInductor fp16 and the bf16 TensorRT builds;
- this set is the machine-blind space: the plan cuts it to what the machine computes
  natively (:func:`aitune_fp.shell.variants.planned`), naming what it left out in its
  plan line and the record's ``left_out``; a variant the machine cannot run for another
  reason (no CUDA, a library missing) fails at build with its reason;
- ``precisions`` keeps only the candidates computing in those precisions
  (:func:`precision_of`).
"""

from __future__ import annotations

import torch

from aitune_fp.core.accuracy.search import Search
from aitune_fp.effects.backends.base import Backend
from aitune_fp.effects.backends.registry import default_backends, search_variants


def precision_of(backend: Backend) -> str:
    """The precision a config computes in (its :attr:`~.base.Backend.computes_in`).

    >>> from aitune_fp.effects.backends.ort import OnnxRuntime
    >>> from aitune_fp.effects.backends.trt import TensorRT
    >>> precision_of(OnnxRuntime(precision="int8-static")), precision_of(TensorRT(fp16=True))
    ('int8', 'float16')
    """
    return backend.computes_in


def _variants(level: str, kind: str) -> tuple[Backend, ...]:
    """The variants of ``level``: ``default``'s, then (for ``wide``) those it adds."""
    levels = {"none": (), "default": ("default",), "wide": ("default", "wide")}[level]
    return tuple(b for name in levels for b in search_variants(name, kind))


def search_candidates(search: Search, device: torch.device | str) -> tuple[Backend, ...]:
    """The candidates of ``search`` on ``device`` (eager fp32 excluded: it is the baseline).

    >>> [b.describe() for b in search_candidates(Search(), "cpu")]  # doctest: +NORMALIZE_WHITESPACE
    ['inductor', 'aot_inductor', 'onnxruntime', 'openvino', "eager(precision='bfloat16')",
     "inductor(precision='bfloat16', freezing=True)", "onnxruntime(precision='int8-dynamic')",
     "onnxruntime(graph_optimization='basic')", "openvino(precision='bfloat16')",
     "openvino(quantization='int8')"]
    >>> [b.describe() for b in search_candidates(Search("none"), "cpu")]
    ['inductor', 'aot_inductor', 'onnxruntime', 'openvino']
    >>> narrow = Search("wide", frozenset({"int8"}))
    >>> [b.describe() for b in search_candidates(narrow, "cpu")]  # doctest: +NORMALIZE_WHITESPACE
    ["onnxruntime(precision='int8-dynamic')", "openvino(quantization='int8')",
     "onnxruntime(precision='int8-static')", "openvino(quantization='int8-weights')"]
    """
    kind = torch.device(device).type
    every = (*default_backends(device), *_variants(search.level, kind))
    return tuple(b for b in every if search.admits(precision_of(b)))


def narrowed(search: Search, backends: tuple[Backend, ...]) -> tuple[Backend, ...]:
    """``backends`` (a user's list) kept to the search's precisions."""
    return tuple(b for b in backends if search.admits(precision_of(b)))
