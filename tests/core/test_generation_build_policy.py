"""The generation build policy: eager always runs, a failed build is not retried, a bf16
copy of a failing eager bf16 is not compiled, and the wall budget stops new builds only."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from aitune_fp.core.generation import GenerationResult, TuneClock, build_id, skip_reason

_s = st.floats(min_value=0.0, max_value=1e4, allow_nan=False)
_kinds = st.frozensets(st.sampled_from(["eager", "inductor", "aoti", "onnx"]), min_size=1)


def _eager(accurate: bool) -> GenerationResult:
    return GenerationResult("eager_static_bf16", "p", "d", 1, 8, 4, 1.0, 1.0, accurate=accurate)


@given(_s, _s, _s, st.booleans())
def test_all_eager_is_never_skipped(elapsed: float, longest: float, wall: float, ok: bool) -> None:
    """A candidate that compiles nothing is built whatever the clock and what failed."""
    clock = TuneClock(elapsed, longest, wall)
    failed = {build_id("eager", "bfloat16"): "boom"}
    assert skip_reason(frozenset({"eager"}), "bfloat16", clock, _eager(ok), failed) is None


@given(_kinds.filter(lambda k: k != {"eager"}), _s, _s, _s)
def test_wall_rule(kinds: frozenset[str], elapsed: float, longest: float, wall: float) -> None:
    """With nothing failed, a compiling fp32 candidate is skipped exactly when the longest
    build would overrun the wall budget, and never when its build is already under way."""
    clock = TuneClock(elapsed, longest, wall)
    why = skip_reason(kinds, "float32", clock, None, {})
    assert (why is not None) == (elapsed + longest > wall)
    assert skip_reason(kinds, "float32", clock, None, {}, under_way=True) is None


@given(_s)
def test_failed_build_is_not_retried(elapsed: float) -> None:
    """A build that failed once makes every candidate needing it skip, quoting the failure."""
    failed = {build_id("aoti", "float32"): "aoti_static failed at build: BuildTimeout"}
    why = skip_reason(
        frozenset({"eager", "aoti"}), "float32", TuneClock(elapsed, 0, 1e9), None, failed
    )
    assert why is not None and "BuildTimeout" in why


@given(st.booleans())
def test_bf16_compile_follows_eager_bf16(accurate: bool) -> None:
    """A compiled bf16 candidate is skipped exactly when eager bf16 failed the policy."""
    why = skip_reason(
        frozenset({"inductor"}), "bfloat16", TuneClock(0, 0, 1e9), _eager(accurate), {}
    )
    assert (why is None) == accurate


@given(_s, _s, _s, _s)
def test_build_budget_is_bounded(elapsed: float, longest: float, wall: float, per: float) -> None:
    """A build gets neither more than its own budget nor more than the wall has left."""
    budget = TuneClock(elapsed, longest, wall).build_budget(per)
    assert 0.0 <= budget <= per and budget <= max(wall - elapsed, 0.0)
