"""The TF32 policy of validation (issue 26 §3): the eager reference is strict float32, a
strict-fp32 engine passes the float32 bound on a conv model, torch-kernel candidates are
judged at what torch's switches allow.

Sources checked: torch 2.13 (installed): ``torch.backends.cudnn.allow_tf32`` defaults to
True and ``torch.backends.cudnn.conv.fp32_precision`` to ``"tf32"``;
``torch.backends.cuda.matmul.fp32_precision`` defaults to ``"none"`` (strict); reading the
legacy flags after setting the new ones raises ("mix of the legacy and new APIs"). On CUDA,
cuDNN with TF32 rounds a convolution's operands to a 10-bit mantissa and accumulates in
float32; :class:`CudnnConv` below computes a 1x1 convolution on CPU exactly that way
whenever torch's convolution switch says TF32, so it stands in for a conv model on a GPU.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from aitune_fp.effects.backends.base import Built
from aitune_fp.effects.checks.tf32 import Tf32Switches, candidate_precision, strict_fp32
from aitune_fp.effects.checks.validate import validate
from aitune_fp.effects.inputs.samples import normalise_samples
from aitune_fp.shell.io import perform

CPU = torch.device("cpu")


def _tf32(t: torch.Tensor) -> torch.Tensor:
    """``t`` rounded to TF32's 10-bit mantissa (round to nearest), kept in float32."""
    bits = t.contiguous().view(torch.int32)
    return ((bits + 0x1000) & ~0x1FFF).view(torch.float32)


class CudnnConv(nn.Module):
    """A 1x1 convolution computed as cuDNN computes it under torch's convolution switch."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv2d(64, 32, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The convolution, with TF32 operands when the switch allows TF32."""
        w = self.conv.weight
        if Tf32Switches.now().conv == "tf32":
            x, w = _tf32(x), _tf32(w)
        return nn.functional.conv2d(x, w, self.conv.bias)


def test_a_strict_fp32_engine_passes_the_float32_bound_on_a_conv_model() -> None:
    """With torch's default switches (TF32 convolutions), an engine computing the conv in
    strict float32 and saying so validates at the float32 bound: the reference is strict
    float32 too (before, eager's TF32 output made it fail)."""
    module = CudnnConv().eval()
    assert Tf32Switches.now().conv == "tf32", "torch's default"
    strict = CudnnConv().eval()
    strict.load_state_dict(module.state_dict())

    def engine(x: torch.Tensor) -> torch.Tensor:
        with strict_fp32():
            out: torch.Tensor = strict(x)
        return out

    samples = normalise_samples(torch.randn(4, 64, 8, 8))
    built = Built(engine, info={"precision": "float32"})
    report = perform(validate("tensorrt", built, module, samples, CPU)).unwrap()
    assert report.max_abs_error == 0.0
    assert report.as_dict()["reference_strict_fp32"] == 1.0
    assert report.as_dict()["tf32_cudnn"] == 1.0


def test_a_wrong_engine_still_fails_the_float32_bound() -> None:
    """The strict reference does not loosen anything: an engine 1 % off fails."""
    module = CudnnConv().eval()
    built = Built(lambda x: module(x) * 1.01, info={"precision": "float32"})
    samples = normalise_samples(torch.randn(4, 64, 8, 8))
    failure = perform(validate("tensorrt", built, module, samples, CPU)).failure()
    assert "tolerance (rtol 0.001" in failure.message


def test_torch_kernel_candidates_are_judged_at_what_the_switches_allow() -> None:
    """A candidate declaring no precision (Inductor, AOTInductor) is judged at TF32 on CUDA
    under torch's defaults; under strict switches or on the CPU their outputs' dtypes decide."""
    cuda = torch.device("cuda", 0)
    assert candidate_precision(None, cuda) == "tf32"
    with strict_fp32():
        assert candidate_precision(None, cuda) is None
        assert Tf32Switches.now() == Tf32Switches("ieee", "ieee")
    assert candidate_precision(None, CPU) is None
    assert candidate_precision("float16", cuda) == "float16"


def test_strict_fp32_restores_switches_set_through_the_new_api() -> None:
    """A user who set TF32 through torch's new ``fp32_precision`` API gets it back after a
    strict reference, and nothing reads the legacy flags in between (which would raise)."""
    if not hasattr(torch.backends.cuda.matmul, "fp32_precision"):
        pytest.skip("this torch has no fp32_precision API")
    matmul = torch.backends.cuda.matmul
    before = matmul.fp32_precision
    try:
        matmul.fp32_precision = "tf32"
        assert Tf32Switches.now().matmul == "tf32"
        with strict_fp32():
            assert Tf32Switches.now().matmul == "ieee"
        assert matmul.fp32_precision == "tf32"
    finally:
        matmul.fp32_precision = before


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_real_strict_conv_validates_against_eager_at_the_float32_bound() -> None:
    """On a GPU with torch's default switches, a conv computed strictly validates at the
    float32 bound against eager (whose default convolutions are TF32)."""
    cuda = torch.device("cuda")
    module = nn.Sequential(nn.Conv2d(64, 64, 3, padding=1), nn.ReLU()).eval().to(cuda)

    def strict(x: torch.Tensor) -> torch.Tensor:
        with strict_fp32(), torch.inference_mode():
            out: torch.Tensor = module(x)
        return out

    samples = normalise_samples(torch.randn(4, 64, 16, 16)).to(cuda)
    built = Built(strict, info={"precision": "float32"})
    assert perform(validate("strict", built, module, samples, cuda)).unwrap().max_abs_error < 1e-4
