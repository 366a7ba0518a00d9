"""OpenVINO's stateful LLM path as generation candidates: the steps reproduce eager fp32's
greedy tokens, quantised weights are judged by the KL and clear-margin policy, thread twins
are every candidate's option, and weight-owning steppers are kept one at a time."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

pytest.importorskip("transformers")
pytest.importorskip("openvino")
pytest.importorskip("nncf")

from aitune_fp import tune_generate
from aitune_fp.effects.generation.loop import greedy
from aitune_fp.effects.generation.openvino_steps import (
    OpenVinoStepper,
    compressed_model,
)
from aitune_fp.effects.generation.teacher import reference, teacher_forced
from aitune_fp.shell.generation.candidates import (
    BY_NAME,
    CANDIDATES,
    PLAIN,
    Steppers,
    named,
    thread_counts,
)
from aitune_fp.shell.io import perform
from tests import tiny_hf


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A generation package folder of this module's own (the OpenVINO models go there)."""
    with tiny_hf.generation_dir(tmp_path_factory.mktemp("ov_generation")) as folder:
        yield folder


@pytest.fixture(scope="module")
def model() -> Any:
    """The shared tiny Llama (vocabulary 128)."""
    return tiny_hf.tiny_llama(vocab=128)


def test_the_stateful_step_generates_eager_fp32_tokens_and_resets(folder: Path, model: Any) -> None:
    """Full-weight OpenVINO greedy equals eager fp32 greedy, and a second generation at
    another batch and length starts from a zeroed cache (same tokens as a fresh stepper)."""
    eager = Steppers(model).get(BY_NAME["eager_static"])
    stepper = OpenVinoStepper(model, "full", "float32", 1)
    ids = torch.randint(0, 128, (2, 7), generator=torch.Generator().manual_seed(3))
    assert torch.equal(greedy(stepper, ids, max_new_tokens=6), greedy(eager, ids, max_new_tokens=6))
    one = ids[:1, :5]
    assert torch.equal(greedy(stepper, one, max_new_tokens=4), greedy(eager, one, max_new_tokens=4))
    assert (folder / next(p.name for p in folder.iterdir() if p.name.endswith(".ov"))).is_dir()


def test_int8_weights_are_smaller_and_close(folder: Path, model: Any) -> None:
    """NNCF int8 weights make a smaller weights file, and its teacher-forced KL is small
    while the figures name the clear-margin positions."""
    full, int8 = compressed_model(model, "full"), compressed_model(model, "int8")
    assert int8.with_suffix(".bin").stat().st_size < full.with_suffix(".bin").stat().st_size / 2
    held = torch.randint(0, 128, (3, 6), generator=torch.Generator().manual_seed(5))
    ref = reference(model, Steppers(model).get(BY_NAME["eager_static"]), held, 8)
    figures = teacher_forced(OpenVinoStepper(model, "int8", "float32"), ref)
    assert figures.kl is not None and 0.0 <= figures.kl < 0.05
    assert figures.clear_positions <= 24


def test_a_model_off_the_cpu_is_refused_before_any_export(folder: Path) -> None:
    """A model on another device (meta) is a ValueError naming it, before anything is
    converted."""
    meta = tiny_hf.tiny_llama(vocab=128).to("meta")
    with pytest.raises(ValueError, match="CPU only; refused for meta"):
        OpenVinoStepper(meta, "full", "float32")


def test_every_candidate_has_its_thread_twins() -> None:
    """The defaults hold each plain host candidate and its twin for every measured thread
    count below the cores (a CUDA graph, launched alone, has none); a twin of any count is
    found by name with its threads."""
    counts = thread_counts(os.cpu_count() or 1)
    names = {c.name for c in CANDIDATES}
    host = [c for c in PLAIN if not c.name.startswith("cudagraph")]
    assert all(f"{c.name}_{n}thread" in names for c in host for n in counts)
    assert not any(n.startswith("cudagraph") and n.endswith("thread") for n in names)
    twin = named("openvino_static_int8_3thread")
    assert twin is not None and twin.threads == 3 and twin.weights == "int8"
    assert twin.decode_backend == "openvino-static-float32-int8w-3thread"
    assert named("openvino_static_int8_0thread") is None


def test_a_tune_with_openvino_candidates_records_their_figures(folder: Path, model: Any) -> None:
    """A tune over OpenVINO full, int8 and a thread twin measures each, records a KL for the
    quantised one (judged by the reduced policy; its run record holds it too) and an exact
    fp32 check for the full one, and its generator reproduces the pick's greedy tokens."""
    prompts = [torch.randint(0, 128, (6,), generator=torch.Generator().manual_seed(9))]
    names = ["openvino_static", "openvino_static_int8", "openvino_static_1thread"]
    tuned = perform(tune_generate(model, prompts, new_tokens=4, candidates=names,
                                  verify_seconds=0.2)).unwrap()  # fmt: skip
    rows = {r.name: r for r in tuned.results if r.batch == 1}
    assert set(names) <= set(rows) and all(rows[n].failure is None for n in names)
    assert rows["openvino_static"].top1 == 1.0 and rows["openvino_static"].accurate
    assert rows["openvino_static_int8"].precision == "int8"
    assert rows["openvino_static_int8"].kl is not None
    assert rows["openvino_static_1thread"].top1 == rows["openvino_static"].top1
    assert tuned.run is not None
    recorded = {o.backend: o.validation for o in tuned.run.candidates}
    assert recorded["openvino_static_int8"]["kl_divergence"] == rows["openvino_static_int8"].kl
    assert "kl_divergence" not in recorded["openvino_static"]
    ids = prompts[0][None]
    out = tuned.generate(ids, max_new_tokens=4)
    assert out.shape == (1, 10)


def test_a_spent_wall_budget_still_builds_variants_of_a_converted_step(
    folder: Path, model: Any
) -> None:
    """With the wall budget spent, an OpenVINO variant whose step is converted already and
    a thread twin of a built candidate are built (neither repeats an export), while a new
    Inductor compile is skipped with the budget's reason; only the pick's stepper is kept."""
    OpenVinoStepper(model, "full", "float32")  # the step is on disk
    prompts = [torch.randint(0, 128, (6,), generator=torch.Generator().manual_seed(2))]
    names = ["openvino_static_int8", "openvino_static_int8_1thread", "compiled_static"]
    tuned = perform(tune_generate(model, prompts, new_tokens=4, candidates=names,
                                  wall_budget_s=0.0, verify_seconds=0.0)).unwrap()  # fmt: skip
    rows = {r.name: r for r in tuned.results if r.batch == 1}
    assert rows["openvino_static_int8"].failure is None
    assert rows["openvino_static_int8_1thread"].failure is None
    assert "tune wall budget" in str(rows["compiled_static"].failure)
    assert set(tuned.steppers.built) <= {tuned.pick.name}


def test_a_build_past_the_memory_budget_is_skipped_with_its_reason(model: Any) -> None:
    """Under a budget smaller than what is in use, a candidate holding its own copy of the
    weights (OpenVINO int8) is skipped naming the memory, while eager over the model itself
    (nothing held beside it) is not."""
    from aitune_fp.shell.generation.holding import memory_skip

    steppers = Steppers(model)
    why = memory_skip(steppers, BY_NAME["openvino_static_int8"], 1.0)
    assert why is not None and "skipped: memory" in why and "GiB budget" in why
    assert memory_skip(steppers, BY_NAME["eager_static"], 1.0) is None


_BF16_ONE_THREAD = """
import sys, torch
sys.path.insert(0, sys.argv[1])
from tests import tiny_hf
from aitune_fp import tune_generate
from aitune_fp.shell.io import perform
model = tiny_hf.tiny_llama(vocab=128)
with tiny_hf.generation_dir(sys.argv[2]):
    tuned = perform(tune_generate(model, [torch.randint(0, 128, (6,))], new_tokens=3,
        candidates=["eager_static", "openvino_static_bf16_1thread"], verify_seconds=0.0)).unwrap()
print([r.failure for r in tuned.results if r.name == "openvino_static_bf16_1thread"][0])
"""


@pytest.mark.skipif(not torch.ops.mkldnn._is_mkldnn_bf16_supported(), reason="needs native bf16")
def test_bf16_on_one_openvino_thread_is_refused_not_compiled(tmp_path: Path) -> None:
    """A tune asking for OpenVINO bf16 on one thread (which kills the process with SIGFPE in
    OpenVINO 2026.4's CPU plugin when compiled) ends normally, in a child process that would
    die if it were compiled, with the refusal recorded as the candidate's failure."""
    import subprocess
    import sys

    root = str(Path(__file__).resolve().parents[2])
    argv = [sys.executable, "-c", _BF16_ONE_THREAD, root, str(tmp_path)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "OpenVINO crashes compiling bf16 for one thread" in done.stdout
