"""Containers as data: flatten, describe, store and rebuild round trips (``weights_only``)."""

from __future__ import annotations

import io
from collections import namedtuple
from dataclasses import dataclass
from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from aitune_fp.effects.cache.probe import outputs_differ
from aitune_fp.effects.inputs.containers import describe, flatten, read_spec, rebuild, to_stored
from tests.tiny_hf import tiny_llama

transformers = pytest.importorskip("transformers")


@dataclass
class Pair:
    """A user's dataclass output (registered as a pytree node when met)."""

    first: torch.Tensor
    second: Any


Point = namedtuple("Point", ["x", "y"])


def _leaf() -> st.SearchStrategy[Any]:
    shapes = st.lists(st.integers(0, 3), max_size=3).map(tuple)
    tensors = shapes.map(lambda s: torch.arange(float(torch.Size(s).numel())).reshape(s))
    return st.one_of(tensors, st.integers(-5, 5), st.none(), st.text(max_size=3))


def _trees() -> st.SearchStrategy[Any]:
    return st.recursive(
        _leaf(),
        lambda kids: st.one_of(
            st.lists(kids, max_size=3),
            st.lists(kids, max_size=3).map(tuple),
            st.dictionaries(st.text("abc", min_size=1, max_size=2), kids, max_size=3),
            st.tuples(kids, kids).map(lambda p: Pair(*p)),
        ),
        max_leaves=8,
    )


def _saved_and_loaded(data: Any) -> Any:
    buffer = io.BytesIO()
    torch.save(data, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)


def _same(a: Any, b: Any) -> bool:
    a_leaves, a_spec = flatten(a)
    b_leaves, b_spec = flatten(b)
    if a_spec != b_spec:
        return False
    return all(
        torch.equal(x, y) if isinstance(x, torch.Tensor) else x == y
        for x, y in zip(a_leaves, b_leaves, strict=True)
    )


@given(_trees())
def test_stored_trees_load_with_weights_only_and_rebuild_equal(tree: Any) -> None:
    """Any tree of tensors, scalars, lists, tuples, dicts and dataclasses survives
    ``to_stored`` → ``torch.save`` → ``torch.load(weights_only=True)`` → ``rebuild``."""
    back = _saved_and_loaded(to_stored(tree))
    assert _same(rebuild(back["leaves"], back["structure"]), tree)


@given(_trees(), _trees())
def test_descriptions_are_equal_exactly_when_the_structures_are(a: Any, b: Any) -> None:
    """Two trees' descriptions agree exactly when their pytree specs do."""
    assert (describe(flatten(a)[1]) == describe(flatten(b)[1])) == (flatten(a)[1] == flatten(b)[1])


def test_a_structure_pytree_cannot_serialise_is_described_not_rebuilt() -> None:
    """A plain named tuple compares by its description but refuses to be rebuilt."""
    text = describe(flatten(Point(torch.zeros(1), 2))[1])
    assert text == describe(flatten(Point(torch.ones(1), 3))[1])
    assert text != describe(flatten((torch.zeros(1), 2))[1])
    with pytest.raises(ValueError, match="cannot be rebuilt"):
        read_spec(text)


def test_a_leaf_that_is_no_plain_data_is_refused_by_name() -> None:
    """``to_stored`` names a leaf that is neither a tensor nor plain data."""
    with pytest.raises(ValueError, match="leaf 1 is a object"):
        to_stored((torch.zeros(1), object()))


def _llama_output() -> Any:
    model = tiny_llama(vocab=64)
    with torch.inference_mode():
        return model(input_ids=torch.randint(0, 64, (1, 5)), use_cache=True)


def test_a_model_output_with_a_dynamic_cache_is_tensors_and_json() -> None:
    """A causal LM's ``ModelOutput`` holding a ``DynamicCache`` flattens to its logits and
    every key and value tensor, loads with ``weights_only=True`` and rebuilds both types."""
    out = _llama_output()
    leaves, _ = flatten(out)
    assert len(leaves) == 1 + 2 * 2 and all(isinstance(t, torch.Tensor) for t in leaves)
    back = _saved_and_loaded(to_stored(out))
    again = rebuild(back["leaves"], back["structure"])
    assert type(again) is type(out) and type(again["cache"]) is type(out["cache"])
    assert torch.equal(again["cache"].layers[1].values, out["cache"].layers[1].values)
    assert outputs_differ(out, back) is None


def test_the_probe_sees_a_changed_cache_tensor() -> None:
    """A probe comparison looks inside the cache: one changed value tensor is a difference."""
    out = _llama_output()
    stored = to_stored(out)
    layer = out["cache"].layers[0]
    layer.values = layer.values + 1.0
    assert "differs" in str(outputs_differ(out, stored))
