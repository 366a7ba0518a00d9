"""The verification keeps its paired samples: they round-trip and recompute its intervals."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from aitune_fp.core.record.json_codec import from_json, to_json
from aitune_fp.core.verification.judge import Paired, Verification, compare, judge

latency = st.floats(min_value=0.1, max_value=10.0, allow_nan=False)


@given(
    st.lists(latency, min_size=1, max_size=30),
    st.lists(latency, min_size=1, max_size=30),
)
def test_the_stored_samples_round_trip_and_recompute_the_interval(
    winner_ms: list[float], other_ms: list[float]
) -> None:
    """A verification stores each participant's paired samples as judged (trimmed to the
    common rounds); they survive the record's JSON and give back its speedup and interval."""
    w, c = Paired("a", 1, tuple(winner_ms)), Paired("b", 2, tuple(other_ms))
    v = judge(w, (c,), "latency", seconds=1.0)
    rounds = min(len(winner_ms), len(other_ms))
    assert v.samples_ms == {"a": tuple(winner_ms[:rounds]), "b": tuple(other_ms[:rounds])}
    back = from_json(to_json(v), Verification, "verification")
    assert back == v and back is not None
    again = compare(Paired("a", 1, back.samples_ms["a"]), Paired("b", 2, back.samples_ms["b"]),
                    "latency")  # fmt: skip
    assert (again.speedup, again.ci95) == (v.speedup, v.ci95)


def test_an_old_verification_without_samples_still_reads() -> None:
    """A record written before the samples were stored reads with no samples."""
    v = judge(Paired("a", 1, (1.0, 1.1)), (Paired("b", 1, (2.0, 2.1)),), "latency", seconds=1.0)
    old = {k: x for k, x in to_json(v).items() if k != "samples_ms"}
    back = from_json(old, Verification, "verification")
    assert back is not None and dict(back.samples_ms) == {} and back.speedup == v.speedup
