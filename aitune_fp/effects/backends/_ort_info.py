"""What an ONNX Runtime runner records about itself, the same on a build and on a load.

Rules:
- ``info`` holds the provider asked for (``auto`` resolved), the providers the session
  really runs on, the device and the precision the providers compute in: the TensorRT
  provider ``float16`` with ``fp16`` else ``tf32`` (TensorRT allows TF32 unless told
  otherwise and ONNX Runtime's provider has no option to forbid it), the CUDA provider
  ``float16`` with ``fp16`` (the graph converted, :mod:`._ort_fp16`), else ``tf32`` with
  ``tf32``, else ``float32``, the CPU provider ``float32``; a quantized
  model ``int8``;
- a runner loaded back from a cached ONNX file gets the very same keys as the build that
  stored it, so validation of a cache hit uses the bound of the precision it really runs
  in (an fp16 or TF32 hit validated at the float32 bound would fail, be evicted and be
  rebuilt on every run).
"""

from __future__ import annotations

from typing import Any

import torch


def ort_precision(provider: str, *, fp16: bool, tf32: bool) -> str:
    """The precision ONNX Runtime's ``provider`` computes in with these flags.

    >>> ort_precision("tensorrt", fp16=True, tf32=False), ort_precision("tensorrt", fp16=False,
    ...     tf32=False), ort_precision("cuda", fp16=False, tf32=True)
    ('float16', 'tf32', 'tf32')
    >>> ort_precision("cuda", fp16=True, tf32=False)
    'float16'
    >>> ort_precision("cpu", fp16=False, tf32=True)
    'float32'
    """
    if provider == "tensorrt":
        return "float16" if fp16 else "tf32"
    if provider == "cuda" and fp16:
        return "float16"
    return "tf32" if provider == "cuda" and tf32 else "float32"


def ort_info(config: Any, session: Any, device: torch.device, said: Any = None) -> dict[str, Any]:
    """The info of a runner of ``config``'s ``session`` on ``device`` (see the rules), with
    the TensorRT profile facts of what opening it ``said`` (a ``SaidDuringOpen``)."""
    provider = config.resolved_provider(device)
    return {
        "provider": provider,
        "providers": list(session.get_providers()),
        "precision": config._precision(device),  # ort_precision, or int8 when quantized
        "device": str(device),
        **(said.profile_facts(provider) if said is not None else {}),
    }
