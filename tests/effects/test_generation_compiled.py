"""The ``torch.compile`` decode step over the static cache (``compiled_static``) compiles once
per (batch, capacity bucket) and never again while decoding: not over more steps than
Dynamo's recompile limit, not for tokens sliced or made outside inference mode, not for
another token count in the same bucket, and not because another stepper compiled."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import torch

transformers = pytest.importorskip("transformers")

from torch._dynamo.utils import counters  # noqa: E402

from aitune_fp.effects.generation.loop import greedy  # noqa: E402
from aitune_fp.effects.generation.static_steps import (  # noqa: E402
    StaticStepper,
    StepRecipe,
    capacity_for,
)
from tests import tiny_hf  # noqa: E402

pytestmark = pytest.mark.heavy

LIMIT = int(torch._dynamo.config.recompile_limit)
PROMPT = torch.randint(3, 256, (1, 8), generator=torch.Generator().manual_seed(3))


def _compiled(model: Any) -> StaticStepper:
    return StaticStepper(model, StepRecipe("eager"), StepRecipe("inductor"))


def _entries(stepper: StaticStepper) -> int:
    code = stepper._decode._torchdynamo_orig_callable.__code__  # type: ignore[attr-defined]
    return len(torch._dynamo.eval_frame._debug_get_cache_entry_list(code))


def _compiles() -> int:
    return int(counters["frames"]["total"])


@pytest.fixture(scope="module")
def model() -> Any:
    """The shared tiny Llama (vocabulary 256)."""
    return tiny_hf.tiny_llama(vocab=256)


@pytest.fixture(scope="module")
def warmed(model: Any) -> tuple[StaticStepper, torch.Tensor]:
    """A compiled stepper warmed up by one short greedy run, and eager's greedy tokens for a
    run of more steps than the recompile limit."""
    stepper = _compiled(model)
    greedy(stepper, PROMPT, max_new_tokens=3)
    eager = StaticStepper(model, StepRecipe("eager"), StepRecipe("eager"))
    return stepper, greedy(eager, PROMPT, max_new_tokens=LIMIT + 4)


def test_a_long_decode_compiles_nothing_after_warm_up(
    warmed: tuple[StaticStepper, torch.Tensor],
) -> None:
    """Decoding more steps than Dynamo's recompile limit (another token count, same bucket)
    adds no compile and keeps one graph, and the tokens are eager's."""
    stepper, want = warmed
    before = _compiles()
    got = greedy(stepper, PROMPT, max_new_tokens=LIMIT + 4)
    assert _compiles() == before
    assert _entries(stepper) == 1
    assert torch.equal(got, want)


def test_sliced_and_non_inference_tokens_reuse_the_graph(
    warmed: tuple[StaticStepper, torch.Tensor],
) -> None:
    """A decode fed a strided slice (teacher forcing) or a tensor made outside inference mode
    (the timing loop) passes the graph's guards: no compile."""
    stepper, want = warmed
    before = _compiles()
    new = want[:, PROMPT.shape[1] :]
    stepper.prefill(PROMPT, None, PROMPT.shape[1] + new.shape[1])
    wide = torch.cat([new, new], dim=0)  # rows of stride 2 * length: a slice is strided
    for i in range(LIMIT + 2):
        stepper.decode(wide[:1, i : i + 1])
    stepper.prefill(PROMPT, None, PROMPT.shape[1] + new.shape[1])
    plain = new[:, :1].clone()  # made outside inference mode
    assert not plain.is_inference()
    for _ in range(LIMIT + 2):
        stepper.decode(plain)
    assert _compiles() == before
    assert _entries(stepper) == 1


def test_another_steppers_compiles_do_not_count_against_this_one(
    model: Any, warmed: tuple[StaticStepper, torch.Tensor]
) -> None:
    """A second compiled stepper (another dtype) compiles its own copy of the step, so the
    first one's cache still holds one entry and its decode compiles nothing."""
    stepper, want = warmed
    other = _compiled(copy.deepcopy(model).to(torch.bfloat16))
    greedy(other, PROMPT, max_new_tokens=2)
    assert _entries(other) == 1 and _entries(stepper) == 1
    before = _compiles()
    assert torch.equal(greedy(stepper, PROMPT, max_new_tokens=LIMIT + 4), want)
    assert _compiles() == before


def test_capacity_buckets_are_powers_of_two_that_fit() -> None:
    """Every length gets a power-of-two capacity of at least 64 that holds it and is less
    than twice its size (above 64)."""
    for n in range(1, 2049):
        cap = capacity_for(n)
        assert cap >= max(n, 64) and cap & (cap - 1) == 0
        assert cap < 2 * n or cap == 64
