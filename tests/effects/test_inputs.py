"""Tests for sample normalisation and batch building."""

from __future__ import annotations

import pytest
import torch

from aitune_fp.effects.inputs.samples import make_batch, normalise_samples


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
        ([torch.zeros(1, 3), torch.zeros(1, 3, 1)], "does not match"),
        ([(3, None)], "holds no tensors"),
        ([(torch.zeros(1, 3), 3), (torch.zeros(1, 3), (3,))], "another structure"),
        ([torch.zeros(1, 3), {"x": torch.zeros(1, 3)}], "does not match"),
        ([(torch.zeros(2, 3), torch.zeros(3, 3))], "disagree on the batch size"),
        ("text", "must be a tensor"),
        ([torch.zeros(1, 3, dtype=torch.float64), torch.zeros(1, 3)], "does not match"),
    ],
)
def test_bad_samples_are_refused_with_a_clear_error(samples: object, match: str) -> None:
    """Empty or mismatched samples (containers included) and samples without a batched
    tensor raise ValueError before any build."""
    with pytest.raises(ValueError, match=match):
        normalise_samples(samples)


def test_unbatched_items_are_collated_with_a_batch_axis() -> None:
    """Un-batched items get a batch axis of size 1 and pool into batches of any size."""
    items = [torch.full((4,), float(i)) for i in range(8)]
    s = normalise_samples(items, batched=False)
    assert not s.batched and s.rows == 8 and s.spec.tensors[0].row_shape == (4,)
    assert make_batch(s, 3).args[0][:, 0].tolist() == [0.0, 1.0, 2.0]


def test_batched_samples_without_a_batch_axis_name_the_option() -> None:
    """A 0-d sample under the batched convention is refused with a pointer to batched=False."""
    with pytest.raises(ValueError, match="batched=False"):
        normalise_samples([torch.tensor(1.0)])


def test_differing_sizes_are_an_inferred_dynamic_axis() -> None:
    """Samples differing along an axis make it dynamic over the sizes seen, marked inferred."""
    s = normalise_samples([torch.zeros(1, 3), torch.zeros(2, 5), torch.zeros(1, 4)])
    (axis,) = s.spec.tensors[0].dynamic
    assert (axis.axis, axis.min, axis.max, axis.inferred) == (1, 3, 5, True)
    assert axis.opt == 5  # the median of the four rows' sizes 3, 5, 5, 4


def test_declared_axes_share_a_dimension_with_agreeing_inputs() -> None:
    """An undeclared axis agreeing with a declared one in every sample joins its dimension."""
    samples = [
        {"input_ids": torch.zeros(1, n, dtype=torch.int64), "mask": torch.ones(1, n)}
        for n in (8, 12)
    ]
    s = normalise_samples(samples, dynamic_axes={"input_ids": {1: (4, 16)}})
    ids, mask = s.spec.tensors
    assert ids.dynamic[0].dim == mask.dynamic[0].dim
    assert (mask.dynamic[0].min, mask.dynamic[0].max) == (4, 16) and mask.dynamic[0].inferred
    assert not ids.dynamic[0].inferred


def test_positional_index_keys_are_accepted() -> None:
    """A positional index key declares the axis of that positional input."""
    s = normalise_samples([torch.zeros(1, 3, 16, 16)], dynamic_axes={0: {2: (8, 32)}})
    (axis,) = s.spec.tensors[0].dynamic
    assert (axis.axis, axis.min, axis.max, axis.inferred) == (2, 8, 32, False)


@pytest.mark.parametrize(
    ("declared", "match"),
    [
        ({"nope": {1: (1, 4)}}, "not an input"),
        ({0: {0: (1, 4)}}, "batch axis"),
        ({0: {3: (1, 4)}}, "has 2 dimensions"),
        ({0: {1: (4, 2)}}, "min <= max"),
        ({0: {1: (5, 9)}}, "does not hold"),
        ({1: {1: (1, 4)}}, "positional inputs"),
    ],
)
def test_bad_dynamic_axes_are_refused(declared: object, match: str) -> None:
    """Unknown inputs, the batch axis, bad axes or ranges not holding the samples are refused."""
    with pytest.raises(ValueError, match=match):
        normalise_samples([torch.zeros(1, 3)], dynamic_axes=declared)  # type: ignore[arg-type]


def test_batches_rotate_over_the_users_shapes() -> None:
    """Batches at successive offsets visit every shape the samples have."""
    s = normalise_samples([torch.zeros(1, n) for n in (2, 3, 4)])
    shapes = {make_batch(s, 2, offset=o).args[0].shape[1] for o in range(3)}
    assert shapes == {2, 3, 4}


def test_batch_at_sets_every_dynamic_dimension() -> None:
    """batch_at resizes every input sharing a dimension to the requested size."""
    from aitune_fp.effects.inputs.samples import batch_at

    samples = [{"ids": torch.arange(n).reshape(1, n), "mask": torch.ones(1, n)} for n in (3, 5)]
    s = normalise_samples(samples, dynamic_axes={"ids": {1: (2, 9)}})
    dim = s.spec.tensors[0].dynamic[0].dim
    b = batch_at(s, 2, {dim: 9})
    assert b.kwargs["ids"].shape == (2, 9) and b.kwargs["mask"].shape == (2, 9)
    assert b.kwargs["ids"][0].tolist() == [0, 1, 2, 0, 1, 2, 0, 1, 2]
