"""The plan cut to what the machine runs natively: ``reach``'s laws, the record's ``left_out``."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from aitune_fp.core.accuracy.reach import (
    REDUCED,
    Capabilities,
    cuda_capabilities,
    left_out_line,
    reach,
    why_not,
)
from aitune_fp.core.record.run_record import RunRecord, decode, encode

PRECISION = st.sampled_from(("float32", *REDUCED))
NATIVE = st.frozensets(st.sampled_from(REDUCED))
CANDIDATES = st.lists(PRECISION, max_size=8).map(
    lambda ps: [(f"c{i}", p) for i, p in enumerate(ps)]
)


@given(CANDIDATES, NATIVE, NATIVE)
def test_reach_keeps_the_native_and_the_named_and_leaves_out_the_rest(
    candidates: list[tuple[str, str]], native: frozenset[str], explicit: frozenset[str]
) -> None:
    """Every candidate is kept or left out, never both; kept ones keep their order; a left-out
    one is not native and not named; a named non-native one is kept with a warning."""
    found = reach(candidates, Capabilities("cpu", native), explicit)
    left = {x.backend for x in found.left_out}
    assert [n for n, _ in candidates if n not in left] == list(found.kept)
    for name, precision in candidates:
        native_here = precision == "float32" or precision in native
        assert (name in left) == (not native_here and precision not in explicit)
        assert (name in {x.backend for x in found.warned}) == (
            not native_here and precision in explicit
        )


@given(st.integers(3, 10), st.integers(0, 9))
def test_cuda_precisions_follow_the_compute_capability(major: int, minor: int) -> None:
    """bfloat16 is native on CUDA from 8.0 on, and its reason names the capability found."""
    found = cuda_capabilities(major, minor)
    reason = why_not("bfloat16", found)
    assert (reason is None) == ((major, minor) >= (8, 0))
    assert reason is None or f"{major}.{minor}" in reason


def test_the_plan_line_names_each_left_out_candidate_once_with_its_reason() -> None:
    """One line names every left-out candidate, grouped under its reason."""
    cpu = Capabilities("cpu", frozenset({"int8"}), frozenset({"avx2"}))
    found = reach([("a", "bfloat16"), ("b", "float16"), ("c", "bfloat16")], cpu)
    line = left_out_line(found.left_out) or ""
    assert line.count("a, c: this CPU has no native bfloat16") == 1
    assert "b: this CPU has no native float16" in line


def _record(**fields: Any) -> RunRecord:
    return RunRecord("m", "cpu", {}, None, (), None, None, {}, {}, None, **fields)


def test_left_out_round_trips_and_an_older_record_reads_as_none_left_out() -> None:
    """``left_out`` survives encode/decode; a record without the key (older) reads as ``()``
    and is written back without it."""
    cpu = Capabilities("cpu", frozenset())
    left = reach([("eager(precision='bfloat16')", "bfloat16")], cpu).left_out
    record = _record(left_out=left)
    assert decode(encode(record)) == record and encode(record)["left_out"][0]["reason"]
    older = encode(_record())
    assert "left_out" not in older and decode(older).left_out == ()


def test_the_report_names_what_the_plan_left_out_only_when_it_left_out_any() -> None:
    """report.md has a "Left out" section with the plan's line for a record that left
    candidates out, and none for one that did not."""
    from aitune_fp.core.report.markdown import render_markdown

    cpu = Capabilities("cpu", frozenset())
    left = reach([("eager(precision='bfloat16')", "bfloat16")], cpu).left_out
    shown = render_markdown(_record(left_out=left))
    assert "## Left out\n\nleft out (not native here): eager(precision='bfloat16')" in shown
    assert "## Left out" not in render_markdown(_record())
