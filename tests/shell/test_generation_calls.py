"""TunedGenerator where users call it: model.generate's arguments and greedy tokens (fp32:
exact), clear refusals naming what greedy decoding cannot honour, the model's outputs and
caches from a call, and a pipeline or a user's object running it after swap."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import torch

transformers = pytest.importorskip("transformers")

from aitune_fp import TunedGenerator, swap  # noqa: E402
from tests import tiny_hf  # noqa: E402
from tests.tiny_generator import picked  # noqa: E402
from tests.tiny_tokenizer import tiny_tokenizer  # noqa: E402


@pytest.fixture(scope="module")
def model() -> Any:
    """The shared tiny Llama, vocabulary 256."""
    return tiny_hf.tiny_llama(vocab=256)


@pytest.fixture(scope="module")
def tuned(model: Any) -> TunedGenerator:
    """The fp32 eager static-cache pick over the tiny Llama."""
    return picked(model)


def _padded() -> tuple[torch.Tensor, torch.Tensor]:
    """Three prompts of 3, 6 and 7 tokens, left-padded with 0."""
    gen = torch.Generator().manual_seed(3)
    ids = torch.randint(3, 256, (3, 7), generator=gen)
    mask = torch.ones_like(ids)
    for row, pad in ((0, 4), (1, 1)):
        ids[row, :pad], mask[row, :pad] = 0, 0
    return ids, mask


@pytest.mark.parametrize(
    "options",
    [
        {"max_new_tokens": 9},
        {"max_new_tokens": 9, "eos_token_id": [5, 7, 11], "pad_token_id": 0},
        {"max_new_tokens": 8, "min_new_tokens": 5, "eos_token_id": 44, "pad_token_id": 1},
        {"max_length": 12, "pad_token_id": 0},
    ],
)
def test_generate_matches_model_generate_exactly(
    tuned: TunedGenerator, model: Any, options: dict[str, Any]
) -> None:
    """Left-padded batches with max/min lengths and EOS lists give model.generate's tokens."""
    ids, mask = _padded()
    want = model.generate(ids, attention_mask=mask, do_sample=False, **options)
    assert torch.equal(tuned.generate(ids, attention_mask=mask, do_sample=False, **options), want)


def test_eos_stops_and_pads_like_generate(tuned: TunedGenerator, model: Any) -> None:
    """With an EOS id the model emits, rows finish, pad afterwards and the loop stops early."""
    ids, mask = _padded()
    free = model.generate(ids, attention_mask=mask, max_new_tokens=4, do_sample=False)
    eos = int(free[0, -2])
    want = model.generate(ids, attention_mask=mask, max_new_tokens=6, eos_token_id=eos)
    got = tuned.generate(input_ids=ids, attention_mask=mask, max_new_tokens=6, eos_token_id=eos)
    assert torch.equal(got, want) and bool((got[0, ids.shape[1] :] == eos).any())


def test_mask_is_inferred_from_padding_as_generate_does(tuned: TunedGenerator, model: Any) -> None:
    """Without attention_mask, a pad id in the prompt is masked as model.generate masks it."""
    ids, _ = _padded()
    want = model.generate(ids, max_new_tokens=5, pad_token_id=0, do_sample=False)
    assert torch.equal(tuned.generate(ids, max_new_tokens=5, pad_token_id=0), want)


def test_return_dict_and_streamer_follow_generate(tuned: TunedGenerator) -> None:
    """return_dict_in_generate gives .sequences; a streamer gets the prompt, then each step."""
    ids, mask = _padded()
    seen: list[torch.Tensor] = []

    class Streamer:
        def put(self, value: torch.Tensor) -> None:
            seen.append(value)

        def end(self) -> None:
            seen.append(torch.empty(0))

    out = tuned.generate(
        ids, mask, max_new_tokens=4, return_dict_in_generate=True, streamer=Streamer()
    )
    assert out.sequences.shape == (3, 11)
    assert torch.equal(seen[0], ids) and [tuple(s.shape) for s in seen[1:]] == [(3,)] * 4 + [(0,)]
    assert torch.equal(torch.stack(seen[1:5], dim=1), out.sequences[:, 7:])


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"do_sample": True}, "do_sample=True"),
        ({"num_beams": 2}, "num_beams=2"),
        ({"repetition_penalty": 1.3}, "repetition_penalty=1.3"),
        ({"output_scores": True}, "output_scores=True"),
        ({"logits_processor": [lambda i, s: s]}, "logits_processor"),
        ({"token_type_ids": torch.zeros(1, 4, dtype=torch.long)}, "token_type_ids"),
    ],
)
@pytest.mark.parametrize("pick", ["eager_static", "hf_eager_dynamic"])
def test_unsupported_arguments_are_refused_by_name(
    model: Any, options: dict[str, Any], named: str, pick: str
) -> None:
    """What greedy decoding cannot honour is a ValueError naming it, whatever the pick."""
    with pytest.raises(ValueError, match=named.replace("(", r"\(")):
        picked(model, pick).generate(torch.ones(1, 4, dtype=torch.long), **options)


def test_baseline_pick_is_model_generate(model: Any) -> None:
    """The baseline pick hands the call to model.generate (same tokens)."""
    ids, mask = _padded()
    got = picked(model, "hf_eager_dynamic").generate(ids, mask, max_new_tokens=4, do_sample=False)
    assert torch.equal(got, model.generate(ids, attention_mask=mask, max_new_tokens=4))


def test_call_returns_the_models_output_and_cache(tuned: TunedGenerator, model: Any) -> None:
    """tuned(ids) is the model's output: equal logits and a cache that a next call extends."""
    ids, mask = _padded()
    want, got = model(input_ids=ids, attention_mask=mask), tuned(ids, mask)
    assert torch.equal(got.logits, want.logits)
    cache = got.past_key_values
    assert isinstance(cache, transformers.Cache) and cache.get_seq_length() == ids.shape[1]
    step = tuned(ids[:, -1:], torch.cat([mask, mask[:, -1:]], 1), past_key_values=cache)
    assert step.logits.shape == (3, 1, 256) and cache.get_seq_length() == ids.shape[1] + 1


def test_generator_stands_in_for_the_model(tuned: TunedGenerator, model: Any) -> None:
    """config, generation_config and device are the model's."""
    assert tuned.config is model.config and tuned.generation_config is model.generation_config
    assert tuned.device == model.device


def test_swap_puts_the_generator_into_a_text_generation_pipeline(
    tuned: TunedGenerator, model: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A transformers pipeline swapped to the generator runs it and gives the same text;
    the original pipeline keeps the model."""
    pipe = transformers.pipeline("text-generation", model=model, tokenizer=tiny_tokenizer())
    swapped = swap(pipe, "model", tuned)
    calls: list[int] = []
    original = TunedGenerator.generate

    def counted(self: TunedGenerator, *args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(TunedGenerator, "generate", counted)
    text = "w5 w9 w77 w120"
    want = pipe(text, max_new_tokens=6, do_sample=False)
    assert calls == []
    assert swapped(text, max_new_tokens=6, do_sample=False) == want and calls == [1]
    assert swapped.model is tuned and pipe.model is model


def test_swap_into_a_users_module_holding_the_model(tuned: TunedGenerator, model: Any) -> None:
    """A user's nn.Module holding .model gets the generator as a plain attribute; its module
    tables hold modules only and the original is untouched."""

    class Chat(torch.nn.Module):
        def __init__(self, lm: Any) -> None:
            super().__init__()
            self.model: Any = lm

        def reply(self, ids: torch.Tensor) -> torch.Tensor:
            out: torch.Tensor = self.model.generate(ids, max_new_tokens=3, do_sample=False)
            return out

    chat = Chat(model)
    swapped = swap(chat, "model", tuned)
    ids = torch.randint(3, 256, (1, 5))
    assert swapped.model is tuned and chat.model is model and "model" not in swapped._modules
    assert torch.equal(swapped.reply(ids), chat.reply(ids))


def test_a_callers_cache_is_continued_not_refused(tuned: TunedGenerator, model: Any) -> None:
    """generate with a prefilled DynamicCache (a prefix already run) continues it exactly as
    model.generate does, rather than refusing the container."""
    ids = torch.randint(3, 256, (1, 8), generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        prefix = model(input_ids=ids[:, :5], use_cache=True).past_key_values
    options = {"max_new_tokens": 4, "do_sample": False}
    want = model.generate(ids, past_key_values=copy.deepcopy(prefix), **options)
    got = tuned.generate(ids, past_key_values=copy.deepcopy(prefix), **options)
    assert torch.equal(got, want) and want.shape == (1, 12)
