"""Tests for the tuned envelope: which calls a tuned backend admits."""

from __future__ import annotations

import pytest
import torch

from aitune_fp.effects.inputs.envelope import Envelope
from aitune_fp.effects.inputs.samples import normalise_samples

TEXT = normalise_samples(
    [
        {"ids": torch.zeros(1, n, dtype=torch.int64), "mask": torch.ones(1, n, dtype=torch.int64)}
        for n in (8, 16)
    ],
    dynamic_axes={"ids": {1: (4, 32)}},
)


def _ids(batch: int, length: int, mask_length: int | None = None) -> dict[str, torch.Tensor]:
    m = length if mask_length is None else mask_length
    return {
        "ids": torch.zeros(batch, length, dtype=torch.int64),
        "mask": torch.ones(batch, m, dtype=torch.int64),
    }


@pytest.mark.parametrize("length", [4, 5, 17, 32])
def test_every_length_in_the_declared_range_is_inside(length: int) -> None:
    """Lengths anywhere in the declared range are admitted, not only the samples' lengths."""
    env = Envelope.of(TEXT.spec, max_batch_size=8)
    assert env.admits((), _ids(3, length)) and env.reason((), _ids(3, length)) == "inside"


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (((), _ids(9, 8)), "outside the tuned range 1..8"),
        (((), _ids(2, 33)), "outside the tuned range 4..32"),
        (((), _ids(2, 3)), "outside the tuned range 4..32"),
        (((), _ids(2, 8, mask_length=9)), "disagree on a shared dimension"),
        (((), {"ids": torch.zeros(2, 8, dtype=torch.int64)}), "keywords"),
        (((torch.zeros(2, 8),), {}), "positional"),
        (((), {**_ids(2, 8), "ids": torch.zeros(2, 8)}), "torch.float32"),
        (((), {**_ids(2, 8), "ids": torch.zeros(2, 8, 1, dtype=torch.int64)}), "dimensions"),
    ],
)
def test_calls_outside_are_refused_with_the_reason(call: tuple, match: str) -> None:
    """A larger batch, a length out of range, disagreeing inputs, another structure, dtype
    or rank is outside, and the reason names it."""
    env = Envelope.of(TEXT.spec, max_batch_size=8)
    args, kwargs = call
    assert not env.admits(args, kwargs)
    assert match in env.reason(args, kwargs)


def test_static_axes_must_keep_their_size() -> None:
    """Without dynamic axes every non-batch axis must keep the tuned size."""
    env = Envelope.of(normalise_samples(torch.zeros(2, 3, 4)).spec)
    assert env.admits((torch.zeros(100, 3, 4),), {})
    assert not env.admits((torch.zeros(1, 3, 5),), {})
    assert env.reason((torch.zeros(1, 3, 5),), {}) == "input_0 axis 2 is 5, tuned for 4"


def test_non_tensor_inputs_are_outside() -> None:
    """A non-tensor where a tensor was tuned is outside, with the type named."""
    env = Envelope.of(normalise_samples(torch.zeros(2, 3)).spec)
    assert not env.admits(([1.0, 2.0, 3.0],), {})
    assert env.reason(([1.0, 2.0, 3.0],), {}) == "input_0 is a list, not a tensor"


def test_the_memo_changes_no_verdict_and_stays_bounded() -> None:
    """Verdicts memoised by shape and dtype equal the full check's, and the memo is bounded."""
    from aitune_fp.effects.inputs.envelope import MEMO_SIZE

    env = Envelope.of(TEXT.spec, max_batch_size=8)
    calls = [_ids(b, n) for b in (1, 9) for n in (3, 4, 32, 33)]
    first = [env.admits((), c) for c in calls]
    again = [env.admits((), c) for c in calls]
    assert (
        first
        == again
        == [env._inside((), c) for c in calls]
        == [False, True, True, False, False, False, False, False]
    )
    for n in range(MEMO_SIZE + 10):
        env.admits((), _ids(1, n + 1))
    assert len(env.memo) <= MEMO_SIZE
