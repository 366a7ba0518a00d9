"""The one list of skips a test run may have: each names a capability of the machine that
a test needs and this machine lacks (a CUDA device, native bf16, an optional GPU library,
Linux's /proc, root...). Any other skip fails the run (:mod:`tests.skip_gate`).

Rules:
- a skip is allowed when its reason begins with one of :data:`ALLOWED`; what follows may say
  more (``needs a CUDA device: torch.cuda.is_available() is False``);
- a Python package of the test extras (``pip install -e '.[test]'``: transformers, ONNX
  Runtime, OpenVINO, Ray, Triton's client, matplotlib, import-linter...) is never a reason:
  CI installs them, so a test that cannot import one fails the run instead of skipping;
  only the GPU libraries no CPU test extra can install (TensorRT, Torch-TensorRT, a CUDA
  build's providers) are, as :data:`NEEDS_GPU_LIBRARY`;
- the machine's features are spelled once, by the package's capability helper
  (:mod:`aitune_fp.effects.machine.capabilities`, which the plans read too): a test that
  needs native bf16, fp16 or int8, AVX-512, VNNI, AMX or a CUDA device skips with that
  helper's reason.

>>> allowed("needs a CUDA device: torch.cuda.is_available() is False")
True
>>> allowed("could not import 'transformers': No module named 'transformers'")
False
"""

from __future__ import annotations

from typing import Final

from aitune_fp.effects.machine.capabilities import (
    NEEDS_AMX,
    NEEDS_AVX512,
    NEEDS_BF16,
    NEEDS_CUDA,
    NEEDS_FP16,
    NEEDS_INT8,
    NEEDS_VNNI,
)

NEEDS_TWO_CUDA: Final = "needs two CUDA devices"
NEEDS_NO_CUDA: Final = "needs a machine without a CUDA device"
NEEDS_GPU_LIBRARY: Final = "needs an optional GPU library"
NEEDS_CPU_ONLY_ORT: Final = "needs a CPU-only ONNX Runtime"
NEEDS_PROC: Final = "needs /proc/self/clear_refs (Linux >= 4.0)"
NEEDS_TMPFS: Final = "needs root to mount a tmpfs"
NEEDS_BASH: Final = "needs bash"

ALLOWED: Final = (
    NEEDS_CUDA, NEEDS_TWO_CUDA, NEEDS_NO_CUDA, NEEDS_BF16, NEEDS_FP16, NEEDS_INT8,
    NEEDS_AVX512, NEEDS_VNNI, NEEDS_AMX, NEEDS_GPU_LIBRARY, NEEDS_CPU_ONLY_ORT, NEEDS_PROC,
    NEEDS_TMPFS, NEEDS_BASH,
)  # fmt: skip
"""Every reason a skip may begin with."""


def allowed(reason: str) -> bool:
    """Whether a skip with ``reason`` is allowed (it begins with one of :data:`ALLOWED`)."""
    return reason.startswith(ALLOWED)
