"""A tuned CUDA runner never gets a tensor from another device (issue 26 §4).

Source checked: the TensorRT 10/11 ``IExecutionContext.set_tensor_address(name, ptr)`` and
onnxruntime's ``IOBinding.bind_input(name, "cuda", device_id, element_type, shape,
buffer_ptr)`` (``onnxruntime/python/onnxruntime_inference_collection.py``, 1.2x–1.3x) take a
raw device address: the runners pass ``tensor.data_ptr()``, so a CPU tensor (or one on
another GPU) would hand them a host pointer. Device objects are compared only, so
``cuda:0`` is named here without a GPU.
"""

from __future__ import annotations

import pytest
import torch

from aitune_fp.core.records import BackendProfilingResult, Selection
from aitune_fp.effects.backends.base import Built
from aitune_fp.effects.backends.ort import OnnxRuntime
from aitune_fp.effects.inputs.envelope import Envelope
from aitune_fp.effects.inputs.samples import normalise_samples
from aitune_fp.shell.tuned_module import CallLimits, OutsideEnvelopeError, TunedModule

CUDA0 = torch.device("cuda", 0)


def test_a_tensor_on_another_device_is_outside_and_named() -> None:
    """An envelope tuned for cuda:0 refuses a CPU tensor of the right shape and dtype, says
    why, and its memo keeps the device apart (a CPU verdict is not reused)."""
    spec = normalise_samples(torch.zeros(2, 4)).spec
    envelope = Envelope.of(spec, 8, CUDA0)
    x = torch.zeros(2, 4)
    assert not envelope.admits((x,), {})
    assert envelope.reason((x,), {}) == "input_0 is on cpu, tuned for cuda:0"
    assert "move the inputs there" in (envelope.device_reason((x,), {}) or "")
    cpu = Envelope.of(spec, 8, "cpu")
    assert cpu.admits((x,), {}) and cpu.device_reason((x,), {}) is None


def test_the_tuned_module_refuses_a_cpu_tensor_before_the_runner_sees_it() -> None:
    """A module tuned on cuda:0 raises a clear error for a CPU input, even with
    ``outside="warn"`` and an eager module to fall back to; the runner is never called."""
    calls: list[int] = []

    def runner(x: torch.Tensor) -> torch.Tensor:
        calls.append(x.data_ptr())
        return x

    samples = normalise_samples(torch.zeros(2, 4))
    selection = Selection("onnxruntime", BackendProfilingResult(100.0, 2, 20.0, 100.0), False)
    built = Built(runner, info={"device": "cuda:0"})
    tuned = TunedModule(
        built, OnnxRuntime(), selection, samples, source=torch.nn.Identity(), limits=CallLimits(8)
    )
    with pytest.raises(OutsideEnvelopeError, match="input_0 is on cpu, the backend runs on cuda:0"):
        tuned(torch.zeros(2, 4))
    assert calls == []


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_real_cuda_tuned_module_refuses_cpu_inputs() -> None:
    """On a GPU, a module whose runner binds CUDA addresses refuses a CPU tensor and runs a
    CUDA one."""
    samples = normalise_samples(torch.zeros(2, 4, device="cuda"))
    selection = Selection("onnxruntime", BackendProfilingResult(100.0, 2, 20.0, 100.0), False)
    built = Built(lambda x: x * 2, info={"device": "cuda"})
    tuned = TunedModule(built, OnnxRuntime(), selection, samples, limits=CallLimits(8))
    with pytest.raises(OutsideEnvelopeError):
        tuned(torch.zeros(2, 4))
    assert tuned(torch.ones(2, 4, device="cuda")).sum().item() == 16.0
