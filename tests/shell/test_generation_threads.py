"""A one-thread candidate generates the model's greedy tokens and leaves the caller's thread
count as it was."""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")

from aitune_fp.effects.generation.loop import greedy, hf_generate  # noqa: E402
from aitune_fp.effects.generation.threads import ThreadedStepper  # noqa: E402
from aitune_fp.shell.generation.candidates import BY_NAME, Steppers, build  # noqa: E402
from tests import tiny_hf  # noqa: E402


def test_one_thread_matches_greedy_and_restores_threads() -> None:
    """eager_static_1thread reproduces model.generate and torch's thread count is unchanged."""
    model = tiny_hf.tiny_llama(vocab=128)
    stepper = build(Steppers(model), BY_NAME["eager_static_1thread"])
    assert isinstance(stepper, ThreadedStepper) and stepper.threads == 1
    ids = torch.randint(0, 128, (2, 5))
    before = torch.get_num_threads()
    got = greedy(stepper, ids, max_new_tokens=4)
    want = hf_generate(model, ids, None, 4)
    assert torch.equal(got, want) and torch.get_num_threads() == before
    assert BY_NAME["eager_static_1thread"].decode_backend == "eager-static-float32-1thread"


def test_threads_below_one_are_refused() -> None:
    """A thread count below one is a ValueError, not a silent default."""
    with pytest.raises(ValueError, match="at least 1"):
        ThreadedStepper(build(Steppers(tiny_hf.tiny_llama(vocab=128)), BY_NAME["eager_static"]), 0)
