"""The payload schema: JSON arrays checked against an input's signature, one line each."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from aitune_fp.core.serving.schema import PayloadError, TensorSig, check_json_array, check_names


def _nested(shape: tuple[int, ...], value: Any) -> Any:
    if not shape:
        return value
    return [_nested(shape[1:], value) for _ in range(shape[0])]


@given(st.lists(st.integers(1, 4), min_size=1, max_size=4), st.integers(-5, 5))
def test_a_rectangular_array_of_the_right_kind_gives_its_shape(dims: list[int], value: int) -> None:
    """A rectangular nested list of integers is accepted for int64 and float32 inputs with
    variable dims, and its shape is returned."""
    shape = tuple(dims)
    for dtype in ("int64", "float32"):
        sig = TensorSig("x", dtype, tuple(-1 for _ in shape))
        assert check_json_array(sig, _nested(shape, value)) == shape


@given(st.lists(st.integers(1, 3), min_size=1, max_size=3))
def test_wrong_rank_kind_or_fixed_size_is_a_422_naming_the_input(dims: list[int]) -> None:
    """Too few or too many dimensions, a fraction for an integer input, a string, and a
    wrong fixed axis are each a 422 whose one line names the input."""
    shape = tuple(dims)
    sig = TensorSig("ids", "int64", tuple(-1 for _ in shape))
    cases = [
        _nested(shape[:-1], 1) if len(shape) > 1 else 1,
        _nested((*shape, 1), 1),
        _nested(shape, 0.5),
        _nested(shape, "a"),
    ]
    fixed = TensorSig("ids", "int64", (*(-1 for _ in shape[:-1]), shape[-1] + 1))
    results = [check_json_array(sig, c) for c in cases] + [
        check_json_array(fixed, _nested(shape, 1))
    ]
    for r in results:
        assert isinstance(r, PayloadError) and r.status == 422
        assert "ids" in r.reason and "\n" not in r.reason


def test_ragged_arrays_and_wrong_names_are_400s() -> None:
    """A ragged array, an unknown input and a missing input are malformed (400)."""
    sig = TensorSig("x", "float32", (-1, 2))
    ragged = check_json_array(sig, [[1.0, 2.0], [1.0]])
    assert isinstance(ragged, PayloadError) and ragged.status == 400
    sigs = (sig, TensorSig("mask", "bool", (-1, 2)))
    assert check_names(sigs, ["x", "y", "mask"]).status == 400  # type: ignore[union-attr]
    assert "missing input 'mask'" in check_names(sigs, ["x"]).reason  # type: ignore[union-attr]
    assert check_names(sigs, ["mask", "x"]) is None


def test_bool_inputs_take_only_booleans() -> None:
    """A bool input refuses numbers, and number inputs refuse booleans."""
    assert check_json_array(TensorSig("m", "bool", (-1,)), [True, False]) == (2,)
    assert isinstance(check_json_array(TensorSig("m", "bool", (-1,)), [1, 0]), PayloadError)
    assert isinstance(check_json_array(TensorSig("x", "float32", (-1,)), [True]), PayloadError)
