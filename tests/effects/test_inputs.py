"""Tests for sample normalisation and batch building."""

from __future__ import annotations

import pytest
import torch

from aitune_fp.effects.inputs import make_batch, normalise_samples


def test_single_tensor_is_one_sample() -> None:
    """A bare tensor is taken as one sample with one positional input."""
    s = normalise_samples(torch.zeros(2, 3))
    assert len(s.items) == 1 and s.spec.positional == ("input_0",) and s.rows == 2


def test_tuple_of_tensors_is_one_positional_sample() -> None:
    """A tuple of tensors is one sample with several positional inputs."""
    s = normalise_samples((torch.zeros(1, 3), torch.ones(1, 5)))
    assert s.spec.positional == ("input_0", "input_1")
    assert [t.row_shape for t in s.spec.tensors] == [(3,), (5,)]


def test_dict_sample_gives_keyword_inputs() -> None:
    """A dict sample maps to keyword inputs, in the user's key order."""
    s = normalise_samples([{"ids": torch.zeros(1, 4, dtype=torch.int64)}])
    assert s.spec.keywords == ("ids",) and s.spec.tensors[0].dtype == "int64"


def test_batches_cycle_through_all_samples() -> None:
    """A batch takes rows from every sample, cycling, instead of repeating sample 0."""
    s = normalise_samples([torch.full((1, 2), float(i)) for i in range(3)])
    rows = make_batch(s, 5).args[0][:, 0].tolist()
    assert rows == [0.0, 1.0, 2.0, 0.0, 1.0]


def test_offset_shifts_the_cycle() -> None:
    """An offset starts the cycle at another row, so pooled batches differ."""
    s = normalise_samples([torch.full((1, 1), float(i)) for i in range(3)])
    assert make_batch(s, 2, offset=1).args[0].flatten().tolist() == [1.0, 2.0]


def test_keyword_batches_keep_names() -> None:
    """Keyword samples produce keyword batches of the requested size."""
    s = normalise_samples([{"x": torch.randn(2, 3)}, {"x": torch.randn(1, 3)}])
    b = make_batch(s, 4)
    assert set(b.kwargs) == {"x"} and b.kwargs["x"].shape == (4, 3) and b.size == 4


def test_batch_axis_is_declarable() -> None:
    """A declared batch axis is the one batches grow along."""
    s = normalise_samples([torch.randn(5, 1, 7)], batch_axis=1)
    assert make_batch(s, 3).args[0].shape == (5, 3, 7)


@pytest.mark.parametrize(
    ("samples", "match"),
    [
        ([], "no samples"),
        ([torch.zeros(1, 3), torch.zeros(1, 4)], "does not match"),
        ([(torch.zeros(1, 3), 3)], "not a tensor"),
        ([torch.zeros(1, 3), {"x": torch.zeros(1, 3)}], "does not match"),
        ([(torch.zeros(2, 3), torch.zeros(3, 3))], "disagree on the batch size"),
        ("text", "must be a tensor"),
        ([torch.zeros(1, 3, dtype=torch.float64), torch.zeros(1, 3)], "does not match"),
    ],
)
def test_bad_samples_are_refused_with_a_clear_error(samples: object, match: str) -> None:
    """Empty, mismatched or non-tensor samples raise ValueError before any build."""
    with pytest.raises(ValueError, match=match):
        normalise_samples(samples)
