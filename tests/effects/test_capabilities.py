"""The one capability helper: what a CPU computes natively, and the skip reasons tests use.

This machine may have AVX512-BF16/AMX; an AVX2-only CPU is given as a value (its flags)."""

from __future__ import annotations

import torch

from aitune_fp.effects.backends.eager import TorchEager
from aitune_fp.effects.machine.capabilities import (
    NEEDS_AMX,
    NEEDS_BF16,
    NEEDS_CUDA,
    NEEDS_INT8,
    NEEDS_VNNI,
    capabilities,
    cpu_capabilities,
    cpu_flags,
    missing,
)
from aitune_fp.shell.variants import planned

EPYC_AVX2 = "processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu sse2 avx avx2 fma bmi2\n"


def test_this_cpu_reads_as_the_backends_build_check_says() -> None:
    """The plan's bf16 answer is the backends' own (oneDNN's), so the plan leaves out
    exactly what a build would refuse; the answer is read once (the same value back)."""
    found = capabilities("cpu")
    assert found.is_native("bfloat16") == bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    assert capabilities(torch.device("cpu")) is found
    assert (missing(NEEDS_BF16) is None) == found.is_native("bfloat16")


def test_an_avx2_only_cpu_has_int8_but_no_bf16_vnni_or_amx() -> None:
    """From an AVX2-only CPU's flags: int8 dot products are native, bf16 is not, and the
    skip reasons say what is missing."""
    avx2 = cpu_capabilities(cpu_flags(EPYC_AVX2), bf16=False, fp16=False)
    assert "avx2" in avx2.features and avx2.native == frozenset({"int8"})
    assert missing(NEEDS_BF16, avx2) == "needs native bf16"
    assert [missing(n, avx2) for n in (NEEDS_INT8, NEEDS_VNNI, NEEDS_AMX)] == [
        None, NEEDS_VNNI, NEEDS_AMX,
    ]  # fmt: skip
    assert missing(NEEDS_CUDA, avx2) == NEEDS_CUDA


def test_the_default_cpu_search_on_an_avx2_cpu_leaves_out_only_the_bf16_variants() -> None:
    """On an AVX2-only CPU the default search keeps its fp32 and int8 candidates and leaves
    out its bf16 ones, each with the reason; nothing it keeps computes in bf16."""
    avx2 = cpu_capabilities(cpu_flags(EPYC_AVX2), bf16=False, fp16=False)
    kept, left = planned(None, None, torch.device("cpu"), avx2)
    assert {x.precision for x in left} == {"bfloat16"} and len(left) >= 3
    assert all("no native bfloat16" in x.reason for x in left)
    assert "onnxruntime(precision='int8-dynamic')" in [b.describe() for b in kept]
    assert all(b.computes_in != "bfloat16" for b in kept)
    pinned, none_left = planned([TorchEager(precision="bfloat16")], None, torch.device("cpu"), avx2)
    assert len(pinned) == 1 and none_left == ()  # a pinned config is the user's: kept
