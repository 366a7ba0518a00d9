"""tune_generate refuses a bad request with a one-line TuneError naming the problem, before
anything is built or timed."""

from __future__ import annotations

from typing import Any

import pytest
import torch

pytest.importorskip("transformers")

from aitune_fp import tune_generate
from aitune_fp.shell.generation.candidates import Steppers
from aitune_fp.shell.io import perform
from tests import tiny_hf


@pytest.fixture(scope="module")
def model() -> Any:
    """The shared tiny Llama, vocabulary 256, 64 positions."""
    return tiny_hf.tiny_llama(vocab=256)


@pytest.fixture(autouse=True)
def nothing_is_built(monkeypatch: pytest.MonkeyPatch) -> None:
    """Building a stepper fails the test: a refusal comes before any build."""

    def refuse(*_args: Any, **_kw: Any) -> None:
        raise AssertionError("a refused request built a stepper")

    monkeypatch.setattr(Steppers, "get", refuse)


class _NoVocab(torch.nn.Module):
    """A module with generate() but a config without vocab_size."""

    config = type("Config", (), {})()

    def generate(self, *_args: Any) -> None:
        """Never called."""


def _refusal(model: Any, prompts: list[Any], **kw: Any) -> str:
    message: str = perform(tune_generate(model, prompts, **kw)).failure().message
    assert "\n" not in message
    return message


def test_a_model_without_generate_is_refused() -> None:
    """A plain module (no generate) is refused, naming generate()."""
    assert "no generate()" in _refusal(torch.nn.Linear(2, 2), [torch.ones(3, dtype=torch.long)])


def test_a_model_without_vocabulary_is_refused() -> None:
    """A model whose config has no vocab_size is refused, naming vocab_size."""
    assert "vocab_size" in _refusal(_NoVocab(), [torch.ones(3, dtype=torch.long)])


def test_no_prompts_and_empty_prompts_are_refused(model: Any) -> None:
    """No prompt at all, or a prompt of no tokens, is refused naming the prompt."""
    assert "no prompts given" in _refusal(model, [])
    assert "prompt 1 has no tokens" in _refusal(
        model, [torch.ones(3, dtype=torch.long), torch.ones(0, dtype=torch.long)]
    )


def test_a_prompt_beyond_the_models_positions_is_refused(model: Any) -> None:
    """A prompt whose tokens and new tokens exceed max_position_embeddings (64) is refused,
    naming its length and the model's positions."""
    message = _refusal(model, [torch.ones(60, dtype=torch.long)], new_tokens=8)
    assert "60 tokens" in message and "64 positions" in message


def test_an_unknown_candidate_is_refused(model: Any) -> None:
    """An unknown candidate name is refused, naming it and the known ones."""
    message = _refusal(model, [torch.ones(3, dtype=torch.long)], candidates=["warp_drive"])
    assert "unknown candidate 'warp_drive'" in message and "eager_static" in message
