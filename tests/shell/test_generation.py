"""tune_generate on a tiny Llama from a config: it picks, matches greedy output, saves, loads."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")

from aitune_fp import TunedGenerator, generation_budget, tune_generate  # noqa: E402
from aitune_fp.shell.io import perform  # noqa: E402
from tests import tiny_hf  # noqa: E402
from tests.no_tuning import bindings, refuse  # noqa: E402


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
    """Calling the generator returns the model's float32 logits: the fp32 pick's equal the
    model's to float rounding, the tune's own pick's within its precision's reach."""
    ids = torch.randint(0, 256, (2, 5))
    with torch.inference_mode():
        want = tiny_llama(input_ids=ids).logits
    fp32 = TunedGenerator.load_pick(tuned, "eager_static")(ids).logits
    torch.testing.assert_close(fp32, want, rtol=1e-4, atol=1e-5)
    got = tuned(ids).logits
    reach = 5e-2 if "bf16" in tuned.pick.name else 1e-4
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, want, rtol=reach, atol=reach)


def test_saved_pick_loads_and_generates(
    tuned: TunedGenerator, tiny_llama: torch.nn.Module, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """A saved pick reloads over the module with every binding of the tuner and the
    generation timers refused (no re-tune, no re-measure), keeps the tune's figures, and
    generates the tokens the tuned pick generates."""
    tuned.save(tmp_path / "gen.json")
    for module, name in bindings():
        monkeypatch.setattr(module, name, refuse)
    loaded = TunedGenerator.load(tmp_path / "gen.json", module=tiny_llama)
    assert loaded.pick == tuned.pick and loaded.results == tuned.results
    ids = torch.randint(0, 256, (2, 4))
    want = tuned.generate(ids, max_new_tokens=3, min_new_tokens=3)
    assert torch.equal(loaded.generate(ids, max_new_tokens=3, min_new_tokens=3), want)


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


def test_the_tune_is_a_session_whose_record_replays_and_verifies_the_pick(
    tuned: TunedGenerator,
) -> None:
    """The tune's run record is its session's: replaying its event log reproduces every
    decision, its verification timed the pick against HF generate in paired rounds, and
    the pick's figures are the verification's (not the sweep's) when it held."""
    from aitune_fp.core.session.recorded import replay_lines, replay_record

    record = tuned.run
    assert record is not None and record.events and record.plan is not None
    lines = replay_lines(record, replay_record(record))
    assert lines[-1] == "every decision is the recorded one"
    v = record.verification
    assert v is not None and v.rounds >= 1 and "hf_eager_dynamic" in v.samples_ms
    assert record.selection is not None and record.selection.backend == tuned.pick.name
    swept = next(r for r in tuned.results if r.name == tuned.pick.name)
    assert tuned.pick.name in v.samples_ms and tuned.pick != swept


def test_the_record_states_the_picks_share_of_the_decode_limit(tuned: TunedGenerator) -> None:
    """On a CPU the run record holds the decode limit (measured read bandwidth over the
    weight bytes a step reads) and the pick's share of it, and progress said it."""
    bound = tuned.run.options["decode_bound"] if tuned.run is not None else {}
    assert bound["bandwidth_bytes_per_s"] > 1e8 and bound["weight_bytes"] > 0
    assert bound["tokens_per_s"] > 0 and bound["pick_share"] > 0
    assert any(line.startswith("decode limit") for line in PROGRESS)


def test_a_decode_step_reads_the_head_but_not_the_whole_input_embedding() -> None:
    """The weight bytes of a step leave out the input embedding's matrix, unless the head
    shares it (then it is counted once)."""
    from aitune_fp.effects.machine.bandwidth import weight_bytes

    untied = tiny_hf.tiny_llama(vocab=256)
    embed = untied.get_input_embeddings().weight
    every = sum(p.numel() * p.element_size() for p in untied.parameters())
    every += sum(b.numel() * b.element_size() for b in untied.buffers())
    assert weight_bytes(untied) == every - embed.numel() * embed.element_size()
    untied.get_output_embeddings().weight = embed  # tie them: one matrix, read as the head
    shared = {id(t): t for t in (*untied.parameters(), *untied.buffers())}.values()
    assert weight_bytes(untied) == sum(t.numel() * t.element_size() for t in shared)
