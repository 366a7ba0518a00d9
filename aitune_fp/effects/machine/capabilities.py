"""The machine's native capabilities, read once per device, and the reasons a test that
needs one skips with.

Rules:
- :func:`capabilities` reads a device once (cached per device): on CUDA its compute
  capability; on a CPU the flags of ``/proc/cpuinfo`` (``features``) and oneDNN's own
  answer for bfloat16 and float16 (``torch.ops.mkldnn._is_mkldnn_bf16_supported``, the
  question the backends ask at build), int8 counting as native with AVX2 or a VNNI/AMX
  flag, or on a CPU whose flags cannot be read (no ``/proc/cpuinfo``: nothing to judge by);
- the ``NEEDS_*`` constants are the one spelling of a skip reason; :func:`missing` says
  which of them a machine does not meet (a capability given as a value, so a test can ask
  about a machine other than this one), and :func:`skip_unless` is the pytest mark.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any, Final

import torch

from aitune_fp.core.accuracy.reach import Capabilities, cuda_capabilities

NEEDS_BF16: Final = "needs native bf16"
NEEDS_FP16: Final = "needs native fp16"
NEEDS_INT8: Final = "needs native int8 dot products"
NEEDS_AVX512: Final = "needs AVX-512"
NEEDS_VNNI: Final = "needs VNNI"
NEEDS_AMX: Final = "needs AMX"
NEEDS_CUDA: Final = "needs a CUDA device"
_PRECISION: Final = {NEEDS_BF16: "bfloat16", NEEDS_FP16: "float16", NEEDS_INT8: "int8"}
_FLAGS: Final = {
    NEEDS_AVX512: ("avx512f",),
    NEEDS_VNNI: ("avx512_vnni", "avx_vnni"),
    NEEDS_AMX: ("amx_tile",),
}
_INT8_FLAGS: Final = frozenset({"avx2", "avx_vnni", "avx512_vnni", "amx_int8", "asimddp", "i8mm"})


def cpu_flags(text: str) -> frozenset[str]:
    """The CPU flags a ``/proc/cpuinfo`` text names (x86 ``flags``, Arm ``Features``).

    >>> sorted(cpu_flags("processor : 0\\nflags : fpu avx2 fma\\n"))
    ['avx2', 'fma', 'fpu']
    """
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return frozenset(value.split())
    return frozenset()


def cpu_capabilities(flags: frozenset[str], bf16: bool, fp16: bool) -> Capabilities:
    """A CPU's capabilities from its flags and oneDNN's bf16/fp16 answers.

    >>> sorted(cpu_capabilities(frozenset({"avx2"}), False, False).native)
    ['int8']
    >>> sorted(cpu_capabilities(frozenset(), True, False).native)  # flags unread: int8 kept
    ['bfloat16', 'int8']
    """
    int8 = not flags or bool(flags & _INT8_FLAGS)
    chosen = {"bfloat16": bf16, "float16": fp16, "int8": int8}
    return Capabilities("cpu", frozenset(p for p, yes in chosen.items() if yes), flags)


def _read_cpuinfo() -> str:
    try:
        return Path("/proc/cpuinfo").read_text()
    except OSError:
        return ""


@cache
def _read(kind: str, index: int | None) -> Capabilities:
    if kind == "cuda":
        return cuda_capabilities(*torch.cuda.get_device_capability(index))
    mkldnn = torch.ops.mkldnn
    bf16 = bool(mkldnn._is_mkldnn_bf16_supported())
    fp16 = bool(mkldnn._is_mkldnn_fp16_supported())
    return cpu_capabilities(cpu_flags(_read_cpuinfo()), bf16, fp16)


def capabilities(device: torch.device | str = "cpu") -> Capabilities:
    """What ``device`` computes natively, read once per device (see the module's rules)."""
    found = torch.device(device)
    return _read(found.type, found.index)


def missing(needs: str, found: Capabilities | None = None) -> str | None:
    """``needs`` (a ``NEEDS_*`` constant) when ``found`` (default: this CPU, or the first
    CUDA device for :data:`NEEDS_CUDA`) does not meet it, else ``None``.

    >>> avx2 = Capabilities("cpu", frozenset({"int8"}), frozenset({"avx2"}))
    >>> missing(NEEDS_BF16, avx2), missing(NEEDS_INT8, avx2), missing(NEEDS_AMX, avx2)
    ('needs native bf16', None, 'needs AMX')
    """
    if needs == NEEDS_CUDA:
        has = torch.cuda.is_available() if found is None else found.device == "cuda"
        return None if has else needs
    machine = capabilities("cpu") if found is None else found
    if needs in _PRECISION:
        return None if machine.is_native(_PRECISION[needs]) else needs
    return None if set(_FLAGS[needs]) & machine.features else needs


def skip_unless(needs: str) -> Any:
    """A pytest mark skipping a test on a machine without ``needs``, with that reason."""
    import pytest

    return pytest.mark.skipif(missing(needs) is not None, reason=needs)
