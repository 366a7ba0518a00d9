"""tune_generate on a tiny Llama from a config: it picks, matches greedy output, saves, loads."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")

from aitune_fp import TunedGenerator, generation_budget, tune_generate  # noqa: E402
from aitune_fp.shell.io import perform  # noqa: E402
from tests import tiny_hf  # noqa: E402


@pytest.fixture(scope="module")
def tiny_llama() -> torch.nn.Module:
    """The shared tiny Llama (tests/tiny_hf.py), vocabulary 256."""
    return tiny_hf.tiny_llama(vocab=256)


PROGRESS: list[str] = []


@pytest.fixture(scope="module")
def tuned(tiny_llama: torch.nn.Module) -> TunedGenerator:
    prompt = torch.randint(0, 256, (8,))
    made = tune_generate(
        tiny_llama,
        [prompt],
        new_tokens=6,
        candidates=["eager_static", "eager_static_bf16"],
        progress=PROGRESS.append,
    )
    return perform(made).unwrap()


def test_every_candidate_is_measured_and_checked(tuned: TunedGenerator) -> None:
    """Each candidate has positive TTFT/ITL and fp32 static agrees with eager on every token."""
    names = {r.name for r in tuned.results}
    assert names == {"hf_eager_dynamic", "eager_static", "eager_static_bf16"}
    static = next(r for r in tuned.results if r.name == "eager_static")
    assert static.ttft_ms > 0 and static.itl_ms > 0 and static.top1 == 1.0 and static.accurate
    assert tuned.record()["reason"]


def test_progress_says_each_candidate_built_then_timed(tuned: TunedGenerator) -> None:
    """progress gets one line per candidate as it is built and checked, then one per
    candidate timed (HF generate included) with its TTFT, ITL and tokens/s."""
    built = [line for line in PROGRESS if "teacher-forced top-1" in line]
    timed = [line for line in PROGRESS if "tok/s" in line]
    assert [line.split(":")[0] for line in built] == ["eager_static", "eager_static_bf16"]
    assert {line.split(":")[0] for line in timed} == {r.name for r in tuned.results}
    assert PROGRESS.index(built[-1]) < PROGRESS.index(timed[0])


def test_generate_matches_the_models_greedy_output(
    tuned: TunedGenerator, tiny_llama: torch.nn.Module
) -> None:
    """The static-cache greedy loop reproduces model.generate's greedy tokens (fp32)."""
    ids = torch.randint(0, 256, (2, 8))
    tuned_fp32 = TunedGenerator.load_pick(tuned, "eager_static")
    want = tiny_llama.generate(
        ids,
        attention_mask=torch.ones_like(ids),
        max_new_tokens=7,
        min_new_tokens=7,
        do_sample=False,
        pad_token_id=0,
    )
    assert torch.equal(tuned_fp32.generate(ids, max_new_tokens=7, min_new_tokens=7), want)


def test_call_returns_logits_like_the_model(
    tuned: TunedGenerator, tiny_llama: torch.nn.Module
) -> None:
    """Calling the generator returns [B, L, V] logits as the model does."""
    ids = torch.randint(0, 256, (1, 5))
    assert tuned(ids).logits.shape == tiny_llama(input_ids=ids).logits.shape


def test_saved_pick_loads_and_generates(
    tuned: TunedGenerator, tiny_llama: torch.nn.Module, tmp_path: Path
) -> None:
    """A saved pick reloads over the module without re-tuning and generates."""
    tuned.save(tmp_path / "gen.json")
    loaded = TunedGenerator.load(tmp_path / "gen.json", module=tiny_llama)
    assert loaded.pick == tuned.pick
    assert loaded.generate(torch.randint(0, 256, (1, 4)), max_new_tokens=3).shape == (1, 7)


def test_unreachable_budget_keeps_the_baseline(tiny_llama: torch.nn.Module) -> None:
    """A TTFT budget nobody meets falls back to HF generate and the record says why."""
    made = tune_generate(
        tiny_llama,
        [torch.randint(0, 256, (4,))],
        new_tokens=3,
        strategy=generation_budget(ttft_ms=1e-6),
        candidates=["eager_static"],
    )
    tuned = perform(made).unwrap()
    assert tuned.pick.name == "hf_eager_dynamic" and "unreachable" in tuned.choice.reason
