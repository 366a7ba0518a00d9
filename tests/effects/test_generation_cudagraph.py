"""The CUDA-graph decode candidate (issue 46 §1): captured once per static cache, new inputs
copied into the captured buffers every step, the replayed logits returned; not offered on a
CPU model and refused there by name; on a GPU, tuned on a tiny causal LM."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest
import torch

transformers = pytest.importorskip("transformers")

from aitune_fp import tune_generate  # noqa: E402
from aitune_fp.effects.generation import devices  # noqa: E402
from aitune_fp.effects.generation.loop import greedy  # noqa: E402
from aitune_fp.effects.generation.static_steps import StaticStepper, StepRecipe  # noqa: E402
from aitune_fp.shell.generation.candidates import CANDIDATES  # noqa: E402
from aitune_fp.shell.io import perform  # noqa: E402
from tests import tiny_hf  # noqa: E402

VOCAB = 256
CUDA0 = torch.device("cuda", 0)
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


class FakeGraph:
    """``torch.cuda.CUDAGraph`` (torch/cuda/graphs.py): work launched while it captures is
    recorded, not run; ``replay()`` runs the recorded work again over the same memory."""

    def __init__(self) -> None:
        self.kernels: list[Callable[[], Any]] = []
        self.replays = 0

    def replay(self) -> None:
        for kernel in self.kernels:
            kernel()
        self.replays += 1


class FakeStream:
    """``torch.cuda.Stream`` (torch/cuda/streams.py): ``wait_stream`` orders two streams."""

    def __init__(self, log: list[str], name: str) -> None:
        self.log, self.name = log, name

    def wait_stream(self, other: FakeStream) -> None:
        self.log.append(f"{self.name} waits for {other.name}")


class FakeCuda:
    """The ``torch.cuda`` calls a manual capture uses (torch/cuda/graphs.py ``CUDAGraph``,
    ``graph``; torch/cuda/streams.py ``Stream``; torch/cuda/__init__.py ``stream``,
    ``current_stream``): ``graph(g)`` makes ``g`` the capturing graph for its block."""

    def __init__(self) -> None:
        self.capturing: FakeGraph | None = None
        self.graphs: list[FakeGraph] = []
        self.log: list[str] = []

    def CUDAGraph(self) -> FakeGraph:
        self.graphs.append(FakeGraph())
        return self.graphs[-1]

    @contextlib.contextmanager
    def graph(self, g: FakeGraph) -> Iterator[None]:
        self.capturing = g
        try:
            yield
        finally:
            self.capturing = None

    def Stream(self, device: torch.device | None = None) -> FakeStream:
        return FakeStream(self.log, "side")

    def current_stream(self, device: torch.device | None = None) -> FakeStream:
        return FakeStream(self.log, "current")

    @contextlib.contextmanager
    def stream(self, s: FakeStream) -> Iterator[None]:
        self.log.append(f"enter {s.name}")
        yield
        self.log.append(f"leave {s.name}")


class Captured(torch.nn.Module):
    """The model as a CUDA graph sees its kernels: under the fake's capture a forward is
    recorded against the tensors it was given (its logits buffer holds NaN until a replay
    fills it), otherwise it runs."""

    def __init__(self, model: torch.nn.Module, cuda: FakeCuda) -> None:
        super().__init__()
        self.inner, self.cuda = model, cuda
        self.config = model.config

    def forward(self, **kw: Any) -> Any:
        graph = self.cuda.capturing
        if graph is None:
            return self.inner(**kw)
        out = torch.full((kw["input_ids"].shape[0], 1, VOCAB), float("nan"))
        graph.kernels.append(lambda: out.copy_(self.inner(**kw).logits[:, -1:, :]))
        return SimpleNamespace(logits=out)


@pytest.fixture(scope="module")
def tiny_llama() -> torch.nn.Module:
    """The shared tiny Llama (tests/tiny_hf.py), vocabulary 256."""
    return tiny_hf.tiny_llama(vocab=VOCAB)


def _decode_both(
    graphed: StaticStepper, eager: StaticStepper, ids: torch.Tensor, mask: torch.Tensor
) -> None:
    """Prefill both steppers, then decode six steps on the graphed stepper's argmax tokens,
    asserting every step's logits (and the earlier steps', after later replays) equal eager's."""
    ours, theirs = graphed.prefill(ids, mask, 20), eager.prefill(ids, mask, 20)
    kept: list[tuple[torch.Tensor, torch.Tensor]] = []
    for _ in range(6):
        tokens = ours.argmax(-1, keepdim=True)
        ours, theirs = graphed.decode(tokens), eager.decode(tokens)
        assert not ours.isnan().any()
        torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=1e-4)
        kept.append((ours, theirs))
    for mine, want in kept:
        torch.testing.assert_close(mine, want, atol=1e-5, rtol=1e-4)


def test_the_graph_step_copies_each_steps_inputs_and_returns_the_replayed_logits(
    tiny_llama: torch.nn.Module,
) -> None:
    """Over a fake of torch.cuda's capture (recorded work re-run on the captured memory at
    each replay), the CUDA-graph decode step's logits equal the eager static stepper's at
    every step of two prompts (one left-padded) in one capacity bucket: one capture serves
    both, each step replays once, and a new batch size captures anew."""
    cuda = FakeCuda()
    graphed = StaticStepper(
        Captured(tiny_llama, cuda), StepRecipe("eager"), StepRecipe("cudagraph", cuda=cuda)
    )
    eager = StaticStepper(tiny_llama, StepRecipe("eager"), StepRecipe("eager"))
    torch.manual_seed(1)
    first = torch.randint(1, VOCAB, (1, 7))
    _decode_both(graphed, eager, first, torch.ones_like(first))
    second = torch.randint(1, VOCAB, (1, 9))
    padded = torch.ones_like(second)
    padded[:, :3] = 0
    _decode_both(graphed, eager, second, padded)
    assert len(cuda.graphs) == 1 and cuda.graphs[0].replays == 12
    assert cuda.log[:2] == ["side waits for current", "enter side"]
    pair = torch.randint(1, VOCAB, (2, 5))
    _decode_both(graphed, eager, pair, torch.ones_like(pair))
    assert len(cuda.graphs) == 2 and cuda.graphs[1].replays == 6


def test_a_capture_at_the_caches_last_position_stays_inside_the_cache(
    tiny_llama: torch.nn.Module,
) -> None:
    """A decode step captured at the last free position of its cache (prompt 62 in a
    64-position bucket) warms up without writing past the cache (each warm-up starts at
    the step's position) and its logits equal the eager stepper's."""
    cuda = FakeCuda()
    graphed = StaticStepper(
        Captured(tiny_llama, cuda), StepRecipe("eager"), StepRecipe("cudagraph", cuda=cuda)
    )
    eager = StaticStepper(tiny_llama, StepRecipe("eager"), StepRecipe("eager"))
    ids = torch.randint(1, VOCAB, (1, 62))
    eager.prefill(ids, None, 64)
    tokens = graphed.prefill(ids, None, 64).argmax(-1, keepdim=True)
    torch.testing.assert_close(graphed.decode(tokens), eager.decode(tokens), atol=1e-5, rtol=1e-4)


def test_a_cuda_graph_step_on_a_cpu_model_is_refused_by_name(
    tiny_llama: torch.nn.Module,
) -> None:
    """With torch's own CUDA API, a CUDA-graph decode step over a CPU model is a
    ``ValueError`` saying it needs a CUDA device, before anything is captured."""
    with pytest.raises(ValueError, match="needs a CUDA device; the model is on cpu"):
        StaticStepper(tiny_llama, StepRecipe("eager"), StepRecipe("cudagraph"))


def test_the_cuda_graph_candidate_is_offered_only_on_cuda() -> None:
    """The CUDA-graph candidate is in the candidate list, offered by default on a CUDA
    device only; every other candidate is offered on both."""
    names = [c.name for c in CANDIDATES]
    assert "cudagraph_static" in names
    on_cpu = devices.offered(names, torch.device("cpu"))
    assert "cudagraph_static" not in on_cpu
    assert [n for n in names if n != "cudagraph_static"] == list(on_cpu)
    assert devices.offered(names, CUDA0) == tuple(names)


def test_asked_for_on_a_cpu_model_the_cuda_graph_candidate_is_a_recorded_refusal(
    tiny_llama: torch.nn.Module,
) -> None:
    """A CPU tune asked for ``cudagraph_static`` completes: the candidate is recorded as
    refused ("needs a CUDA device"), never built, and HF generate is the pick."""
    made = tune_generate(tiny_llama, [torch.randint(0, VOCAB, (6,))], new_tokens=4,
                         candidates=["cudagraph_static"], verify_seconds=0)  # fmt: skip
    tuned = perform(made).unwrap()
    row = next(r for r in tuned.results if r.name == "cudagraph_static")
    assert row.failure is not None and "refused on cpu: needs a CUDA device" in row.failure
    assert tuned.pick.name == "hf_eager_dynamic"
    assert "cudagraph_static" not in tuned.steppers.built


@pytest.mark.gpu
@needs_cuda
def test_the_cuda_graph_stepper_matches_generate_on_cuda(tiny_llama: torch.nn.Module) -> None:
    """On a GPU the CUDA-graph decode stepper's greedy tokens equal ``model.generate``'s
    over two prompts of one bucket (one capture), then a second batch size."""
    model = copy.deepcopy(tiny_llama).to(CUDA0)
    stepper = StaticStepper(model, StepRecipe("eager"), StepRecipe("cudagraph"))
    for rows in (1, 1, 2):
        ids = torch.randint(0, VOCAB, (rows, 8), device=CUDA0)
        want = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=6,
                              min_new_tokens=6, do_sample=False, pad_token_id=0)  # fmt: skip
        assert torch.equal(greedy(stepper, ids, max_new_tokens=6), want)


@pytest.mark.gpu
@needs_cuda
def test_tune_generate_on_cuda_measures_the_cuda_graph_candidate(
    tiny_llama: torch.nn.Module, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a GPU, with the CUDA-graph candidate counted as proven, a tune of a tiny causal LM
    builds and measures it: no failure, accurate against eager fp32, positive timings."""
    monkeypatch.setattr(devices, "PROVEN_ON_CUDA", frozenset({"cudagraph_static"}))
    model = copy.deepcopy(tiny_llama).to(CUDA0)
    made = tune_generate(model, [torch.randint(0, VOCAB, (6,))], new_tokens=8,
                         candidates=["cudagraph_static"], verify_seconds=0)  # fmt: skip
    tuned = perform(made).unwrap()
    row = next(r for r in tuned.results if r.name == "cudagraph_static")
    assert row.failure is None and row.accurate, row
    assert row.decode == "cudagraph-static-float32" and row.itl_ms > 0 and row.ttft_ms > 0
