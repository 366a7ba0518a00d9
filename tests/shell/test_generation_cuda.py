"""Generation on a CUDA model: refused with recorded reasons on a fake CUDA device path,
everything made on the model's device, CUDA-event timing; real CUDA runs where a GPU is
(issue 46 §1)."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
import torch

transformers = pytest.importorskip("transformers")

from aitune_fp import tune_generate  # noqa: E402
from aitune_fp.effects.generation import devices  # noqa: E402
from aitune_fp.effects.generation.loop import greedy  # noqa: E402
from aitune_fp.effects.generation.static_steps import StaticStepper, StepRecipe  # noqa: E402
from aitune_fp.effects.generation.timing import default_rule, time_stepper  # noqa: E402
from aitune_fp.shell.generation.candidates import CANDIDATES  # noqa: E402
from aitune_fp.shell.io import perform  # noqa: E402
from tests import tiny_hf  # noqa: E402

CUDA0 = torch.device("cuda", 0)
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@pytest.fixture(scope="module")
def tiny_llama() -> torch.nn.Module:
    """The shared tiny Llama (tests/tiny_hf.py), vocabulary 256."""
    return tiny_hf.tiny_llama(vocab=256)


def test_a_model_on_a_fake_cuda_device_is_refused_with_a_recorded_reason(
    tiny_llama: torch.nn.Module, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model whose parameters read ``cuda:0`` (fakes of ``Tensor.device``, ``Tensor.to``
    and ``torch.cuda.synchronize``) gets every candidate recorded as refused on cuda:0
    with the reason, none built, no device-mismatch traceback; HF ``generate`` is measured
    with the device synchronised at each token stamp, and it is the pick."""
    synced: list[torch.device] = []
    monkeypatch.setattr(devices, "model_device", lambda model: CUDA0)
    monkeypatch.setattr(devices, "to_device", lambda tensor, device: tensor)
    monkeypatch.setattr(devices, "synchronize", synced.append)
    made = tune_generate(tiny_llama, [torch.randint(0, 256, (6,))], new_tokens=4)
    tuned = perform(made).unwrap()
    failures = {r.name: r.failure for r in tuned.results if r.name != "hf_eager_dynamic"}
    assert set(failures) == {c.name for c in CANDIDATES}
    for name, failure in failures.items():
        assert failure is not None and failure.startswith(f"{name} refused on cuda:0: ")
    assert "not yet proven on a CUDA device" in failures["eager_static"]
    assert "CPU provider" in failures["onnx_static"]
    assert tuned.pick.name == "hf_eager_dynamic"
    assert synced and set(synced) == {CUDA0}


def test_the_onnx_stepper_refuses_a_model_off_the_cpu(tiny_llama: torch.nn.Module) -> None:
    """ONNX Runtime's stepper (CPU provider, numpy cache) refuses a model whose weights are
    on another device (here ``meta``) before exporting, naming the device."""
    pytest.importorskip("onnxruntime")
    import copy

    from aitune_fp.effects.generation.onnx_steps import OnnxStepper

    with pytest.raises(ValueError, match="CPU provider only; refused for a model on meta"):
        OnnxStepper(copy.deepcopy(tiny_llama).to("meta"))


class FakeEvent:
    """torch.cuda.Event's timing API (record on a stream, synchronize, elapsed_time)."""

    log: ClassVar[list[str]] = []

    def __init__(self, enable_timing: bool = False) -> None:
        assert enable_timing
        self.at = 0.0

    def record(self, stream: Any) -> None:
        FakeEvent.log.append(f"record on {stream}")
        self.at = 2.5 * len(FakeEvent.log)

    def synchronize(self) -> None:
        FakeEvent.log.append("synchronize")

    def elapsed_time(self, end: FakeEvent) -> float:
        return end.at - self.at


def test_cuda_calls_are_timed_with_events_on_the_current_stream(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On a CUDA device a call is timed by two events recorded on the device's current
    stream around it, the end event waited for (fakes of ``torch.cuda.Event`` and
    ``torch.cuda.current_stream``); the figure is the events', not the wall clock's."""
    FakeEvent.log = []
    monkeypatch.setattr(torch.cuda, "Event", FakeEvent)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device: f"stream of {device}")
    ms = devices.elapsed_ms(lambda: FakeEvent.log.append("call"), CUDA0)
    assert FakeEvent.log == ["record on stream of cuda:0", "call", "record on stream of cuda:0",
                             "synchronize"]  # fmt: skip
    assert ms == 5.0
    assert devices.elapsed_ms(lambda: None, torch.device("cpu")) >= 0.0


def test_the_model_device_is_its_parameters() -> None:
    """A module's device is its first parameter's, else its first buffer's, else the CPU."""
    assert devices.model_device(torch.nn.Linear(2, 2).to("meta")) == torch.device("meta")
    holder = torch.nn.Module()
    holder.register_buffer("b", torch.zeros(1, device="meta"))
    assert devices.model_device(holder) == torch.device("meta")
    assert devices.model_device(torch.nn.Module()) == torch.device("cpu")


@pytest.mark.gpu
@needs_cuda
def test_the_static_stepper_runs_on_cuda_and_matches_generate(
    tiny_llama: torch.nn.Module,
) -> None:
    """On a GPU the eager static stepper keeps everything on the model's device, its greedy
    tokens equal ``model.generate``'s, and its CUDA-event timings are positive."""
    import copy

    model = copy.deepcopy(tiny_llama).to(CUDA0)
    stepper = StaticStepper(model, StepRecipe("eager"), StepRecipe("eager"))
    ids = torch.randint(0, 256, (2, 8), device=CUDA0)
    want = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=6,
                          min_new_tokens=6, do_sample=False, pad_token_id=0)  # fmt: skip
    assert torch.equal(greedy(stepper, ids, max_new_tokens=6), want)
    ttft, itl = time_stepper(stepper, ids, 6, default_rule())
    assert ttft > 0 and itl > 0


@pytest.mark.gpu
@needs_cuda
def test_tune_generate_on_cuda_records_refusals_and_measures_generate(
    tiny_llama: torch.nn.Module,
) -> None:
    """On a GPU the tune completes: HF ``generate`` measured on cuda, every unproven
    candidate recorded as refused there."""
    import copy

    model = copy.deepcopy(tiny_llama).to(CUDA0)
    tuned = perform(tune_generate(model, [torch.randint(0, 256, (6,))], new_tokens=4)).unwrap()
    base = next(r for r in tuned.results if r.name == "hf_eager_dynamic")
    assert base.ttft_ms > 0 and base.failure is None
    assert all("refused on cuda:0" in (r.failure or "") for r in tuned.results if r is not base)


def test_tune_generate_takes_a_device_option() -> None:
    """``aitune-fp tune-generate --device cuda:1`` parses to the device the model is moved
    to (default cpu)."""
    from aitune_fp.cli.parser import build_parser

    parse = build_parser().parse_args
    assert parse(["tune-generate", "m.py:f", "--device", "cuda:1"]).device == "cuda:1"
    assert parse(["tune-generate", "m.py:f"]).device == "cpu"


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is present here")
def test_tune_generate_on_a_missing_cuda_device_is_a_cli_error() -> None:
    """``tune-generate --device cuda`` without a CUDA device is a one-line CLI error naming
    the device, before the factory runs (never a torch traceback)."""
    from aitune_fp.cli.generate_commands import tune_generate as command
    from aitune_fp.cli.outputs import CliError
    from aitune_fp.cli.parser import build_parser

    args = build_parser().parse_args(["tune-generate", "missing.py:f", "--device", "cuda"])
    with pytest.raises(CliError, match="--device: device 'cuda' needs CUDA"):
        command(args, None, None)
