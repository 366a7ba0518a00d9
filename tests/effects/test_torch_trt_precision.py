"""Torch-TensorRT precision plumbing on CPU: settings never dropped, dtypes read back.

``TorchTensorRTModule`` below is a stand-in with the class name of Torch-TensorRT's
runtime module (2.12–2.14, ``torch_tensorrt.dynamo.runtime``) inside a compiled
``GraphModule``-like parent; the settings fields mirror ``CompilationSettings`` of 2.13.0
(no ``enabled_precisions``) and 2.12.1 (with it, ``use_explicit_typing`` default True).
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from aitune_fp.effects.backends._torch_trt_io import called_engines, cast_io, check_precision
from aitune_fp.effects.backends.torch_trt import TorchTensorRT, compilation_settings

SETTINGS_2_13 = {"min_block_size", "disable_tf32", "use_explicit_typing", "workspace_size"}
SETTINGS_2_12 = SETTINGS_2_13 | {"enabled_precisions"}


class TorchTensorRTModule(nn.Module):
    """Stands in for an engine: computes in the dtype it is fed."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(4, 3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x @ weight`` in ``x``'s dtype."""
        return x @ self.weight.to(x.dtype)


class Compiled(nn.Module):
    """A compiled parent holding one engine submodule and a PyTorch op around it."""

    def __init__(self) -> None:
        super().__init__()
        self._run_on_acc_0 = TorchTensorRTModule()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Engine, then a PyTorch ReLU."""
        return torch.relu(self._run_on_acc_0(x))


@pytest.mark.parametrize("known", [SETTINGS_2_12, SETTINGS_2_13], ids=["2.12.1", "2.13.0"])
def test_fp16_never_passes_enabled_precisions(known: set[str]) -> None:
    """The settings carry the TF32 policy and the user's options, never enabled_precisions."""
    settings = compilation_settings(known, tf32=False, options=(("min_block_size", 1),))
    assert settings == {"disable_tf32": True, "min_block_size": 1}


def test_an_option_the_installed_version_lacks_is_refused() -> None:
    """enabled_precisions on 2.13 would be dropped by the JIT path; here it is an error."""
    with pytest.raises(ValueError, match="no compilation setting 'enabled_precisions'"):
        compilation_settings(SETTINGS_2_13, tf32=False, options=(("enabled_precisions", {1}),))


def test_engine_dtypes_are_read_back_from_the_engines_that_ran() -> None:
    """A half-fed engine submodule reports float16; the runner still returns float32."""
    compiled = Compiled()
    engines: list[nn.Module] = []
    seen: list[torch.dtype] = []
    runner = cast_io(compiled, torch.float16, (torch.float32,))
    with called_engines(engines, seen.extend):
        out = runner(torch.ones(2, 4))
    assert engines == [compiled._run_on_acc_0]
    assert out.dtype == torch.float32
    assert check_precision("float16", seen, engines) == "float16"
    runner(torch.ones(2, 4))
    assert len(seen) == 2, "the hook is removed after the read-back"


def test_an_fp16_request_whose_engines_ran_float32_fails() -> None:
    """Feeding the engine float32 (the request silently ignored) is a build failure."""
    compiled = Compiled()
    engines: list[nn.Module] = []
    seen: list[torch.dtype] = []
    with called_engines(engines, seen.extend):
        compiled(torch.ones(2, 4))
    with pytest.raises(RuntimeError, match="asked for float16 but the TensorRT engines"):
        check_precision("float16", seen, engines)


def test_a_bf16_request_is_read_back_and_checked() -> None:
    """A bfloat16-fed engine reads bfloat16 and the runner returns float32; a bf16 request
    whose engines ran float32 (or float16) is a build failure."""
    compiled = Compiled()
    engines: list[nn.Module] = []
    seen: list[torch.dtype] = []
    runner = cast_io(compiled, TorchTensorRT(bf16=True).dtype, (torch.float32,))
    with called_engines(engines, seen.extend):
        out = runner(torch.ones(2, 4))
    assert out.dtype == torch.float32 and set(seen) == {torch.bfloat16}
    assert check_precision("bfloat16", seen, engines) == "bfloat16"
    for wrong in (torch.float32, torch.float16):
        with pytest.raises(RuntimeError, match="asked for bfloat16 but the TensorRT engines"):
            check_precision("bfloat16", [wrong], engines)


def test_a_compiled_module_without_engines_fails() -> None:
    """Everything partitioned back to PyTorch is not a Torch-TensorRT build."""
    engines: list[nn.Module] = []
    with called_engines(engines, lambda _: None):
        nn.Sequential(nn.ReLU())(torch.ones(2))
    assert engines == []
    with pytest.raises(RuntimeError, match="built no TensorRT engine"):
        check_precision("float32", [], engines)


def test_supported_range_is_enforced_from_metadata(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a CUDA device with Torch-TensorRT 2.11 installed, the reason names the range."""
    import aitune_fp.effects.backends.torch_trt as module

    monkeypatch.setattr(module, "cuda_backend_reason", lambda *a: None)
    monkeypatch.setattr(
        "aitune_fp.effects.backends._versions.installed_version",
        lambda lib: {"torch_tensorrt": "2.11.0", "tensorrt": "10.16.1.11"}[lib],
    )
    assert TorchTensorRT().unavailable_reason(torch.device("cuda", 0)) == (
        "torch_tensorrt 2.11.0 is outside the supported range >=2.12,<2.15"
    )
