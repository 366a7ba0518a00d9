"""Verification laws (aitune_fp.core.laws.verification) and the pure decision's cases."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from returns.result import Success

from aitune_fp import Profile, max_throughput, min_latency, tune
from aitune_fp.core.laws.verification import VERIFICATION_LAWS
from aitune_fp.core.verification.judge import MIN_ROUNDS, Paired, Verification, judge, verified
from aitune_fp.core.verification.verification_plan import (
    at_batch_size,
    batch_neighbours,
    challengers,
)


@st.composite
def participants(draw: st.DrawFn) -> tuple[Paired, tuple[Paired, ...]]:
    """A winner and 1-3 challengers (other backends, or the winner at other batch sizes): a
    shared per-round drift times each one's level and jitter."""
    rounds = draw(st.integers(1, 40))
    drift = draw(st.lists(st.floats(0.8, 1.25), min_size=rounds, max_size=rounds))
    made = []
    for i in range(draw(st.integers(2, 4))):
        level = draw(st.floats(0.05, 50.0))
        jitter = draw(st.lists(st.floats(0.9, 1.1), min_size=rounds, max_size=rounds))
        length = draw(st.integers(rounds, rounds + 3))
        samples = tuple(level * d * j for d, j in zip(drift, jitter, strict=True))
        samples += (level,) * (length - rounds)
        if i and draw(st.booleans()):  # the winner at another batch size
            bs = made[0].batch_size * 2**i
            made.append(Paired("b0", bs, samples, f"b0@{bs}"))
        else:
            made.append(Paired(f"b{i}", draw(st.sampled_from((1, 2, 8, 32))), samples))
    return made[0], tuple(made[1:])


@pytest.mark.parametrize("law", VERIFICATION_LAWS, ids=lambda law: law.name)
@settings(max_examples=60, deadline=None)
@given(case=participants(), kind=st.sampled_from(("latency", "throughput")))
def test_verification_law(law: object, case: tuple[Paired, tuple[Paired, ...]], kind: str) -> None:
    """Every verification law holds for generated paired samples (its statement is its id)."""
    winner, others = case
    assert law.holds(winner, others, kind)  # type: ignore[attr-defined]


def _steady(name: str, ms: float, rounds: int = 40, bs: int = 1) -> Paired:
    wiggle = (1.0, 1.01, 0.99, 1.02, 0.98)
    return Paired(name, bs, tuple(ms * wiggle[i % 5] for i in range(rounds)))


def test_planted_wrong_pick_is_overturned_and_named() -> None:
    """A winner 20 % slower than its challenger in paired rounds is overturned, naming it."""
    v = judge(_steady("aot", 1.2), (_steady("ort", 1.0),), "latency", seconds=3.0)
    assert not v.holds and v.selected == "ort" and v.challenger == "ort"
    assert v.ci95[1] < 1.0 and v.outcome == "clear"
    moved = ": clear: the pick aot@1 does not hold: ort@1 is faster, 1.200× [1.200, 1.200] over"
    assert moved in v.reason
    assert [(c.challenger, c.verdict) for c in v.standing] == [("aot", "win")]


def test_correct_pick_is_confirmed() -> None:
    """A winner 20 % faster than both challengers holds, against the closest one."""
    v = judge(
        _steady("ort", 1.0), (_steady("aot", 1.2), _steady("eager", 2.0)), "latency", seconds=3.0
    )
    assert v.holds and v.selected == "ort" and v.challenger == "aot"
    assert v.ci95[0] > 1.1
    assert ": clear: ort@1 holds against aot@1: 1.200× [1.200, 1.200]" in v.reason


def test_throughput_compares_per_sample_cost() -> None:
    """Under throughput a batch-32 call at 16 ms (0.5 ms/sample) beats batch 1 at 0.8 ms."""
    big, small = _steady("big", 16.0, bs=32), _steady("small", 0.8, bs=1)
    assert judge(big, (small,), "throughput", seconds=1.0).holds
    assert judge(small, (big,), "throughput", seconds=1.0).selected == "big"
    assert judge(big, (small,), "latency", seconds=1.0).selected == "small"


def test_too_few_rounds_keep_the_pick() -> None:
    """With fewer than the minimum rounds even a clear loss keeps the pick, saying why."""
    v = judge(
        _steady("a", 2.0, MIN_ROUNDS - 1), (_steady("b", 1.0, MIN_ROUNDS - 1),), "latency",
        seconds=0.1,
    )  # fmt: skip
    assert v.holds and "too few rounds" in v.reason


def test_judge_needs_challengers() -> None:
    """A verification without a challenger is a ValueError, not a vacuous verdict."""
    with pytest.raises(ValueError, match="at least one challenger"):
        judge(_steady("a", 1.0), (), "latency", seconds=1.0)


def test_verification_rejects_inconsistent_fields() -> None:
    """``holds`` must agree with whether the selected backend is the winner."""
    with pytest.raises(ValueError, match="holds=True"):
        Verification(True, "a", "b", 1.0, (0.9, 1.1), 1.0, selected="b")


def _selection(strategy: object, *named: tuple[str, float]) -> object:
    profiles = [Success(Profile(n, {1: [ms] * 5})) for n, ms in named]
    return tune(strategy, profiles[1:], profiles[0]).unwrap()  # type: ignore[arg-type]


def test_challengers_rank_by_speedup_over_the_winner() -> None:
    """Runner-ups come best first, the baseline among them, the winner never."""
    sel = _selection(min_latency, ("eager", 3.0), ("a", 1.0), ("b", 1.1), ("c", 5.0))
    assert challengers(min_latency, sel, 2) == ("b", "eager")  # type: ignore[arg-type]
    assert challengers(min_latency, sel, 9) == ("b", "eager", "c")  # type: ignore[arg-type]


def test_verified_selection_switches_to_the_challenger_and_notes_it() -> None:
    """An overturned pick becomes the challenger's scored result; a held one only gains a note."""
    sel = _selection(max_throughput, ("eager", 3.0), ("a", 1.0), ("b", 1.1))
    lost = judge(_steady("a", 1.2), (_steady("b", 1.0),), "latency", seconds=1.0)
    new = verified(sel, lost)  # type: ignore[arg-type]
    assert new.backend == "b" and new.result == next(
        s.result
        for s in sel.ranking
        if s.backend == "b"  # type: ignore[attr-defined]
    )
    assert not new.fell_back_to_baseline and new.notes[-1] == lost.reason
    to_base = judge(_steady("a", 1.2), (_steady("eager", 1.0),), "latency", seconds=1.0)
    assert verified(sel, to_base).fell_back_to_baseline  # type: ignore[arg-type]
    held = judge(_steady("a", 1.0), (_steady("b", 1.2),), "latency", seconds=1.0)
    kept = verified(sel, held)  # type: ignore[arg-type]
    assert kept.backend == "a" and kept.notes[-1] == held.reason


def test_run_record_keeps_a_verification_and_reads_older_records() -> None:
    """A record with a verification round-trips; one without the key (older) reads as None."""
    from aitune_fp.core.record.run_record import RunRecord, decode, dumps, encode, loads

    v = judge(_steady("a", 1.2), (_steady("b", 1.0),), "latency", seconds=2.5)
    r = RunRecord("m", "cpu", {}, None, (), None, None, {}, {}, None, verification=v)
    doc = encode(r)
    assert doc["verification"]["holds"] is False and doc["verification"]["ci95"] == list(v.ci95)
    assert {"holds", "winner", "challenger", "speedup", "ci95", "seconds"} <= set(
        doc["verification"]
    )
    assert loads(dumps(r)) == r and loads(dumps(r)).verification == v
    older = dict(doc)
    del older["verification"]
    assert decode(older).verification is None
    assert decode({**doc, "verification": None}).verification is None
    with pytest.raises(ValueError, match=r"run record\.verification\.ci95"):
        decode({**doc, "verification": {**doc["verification"], "ci95": [1.0]}})


def test_the_winner_at_a_neighbouring_batch_size_can_overturn_the_pick() -> None:
    """A faster-per-sample neighbour of the winner overturns it: same backend, its batch size,
    and the selection takes the strategy's result at that batch size."""
    profile = Profile("a", {4: [4.0] * 5, 8: [6.0] * 5, 16: [11.0] * 5})
    sel = tune(max_throughput, [Success(profile)], None).unwrap()
    assert sel.result.selected_batch_size == 16 and batch_neighbours(profile, 16) == (8,)
    neighbour = Paired("a", 8, (5.0,) * 40, "a@8")
    v = judge(_steady("a", 12.0, bs=16), (neighbour,), "throughput", seconds=1.0)
    assert not v.holds and (v.selected, v.selected_batch_size) == ("a", 8)
    assert set(v.samples_ms) == {"a", "a@8"}
    new = verified(sel, v, {("a", 8): at_batch_size(max_throughput, profile, 8)})
    assert new.backend == "a" and new.result.selected_batch_size == 8
    assert new.notes[-1] == v.reason


def _noisy(
    name: str, ms: float, rounds: int, spread: float, bs: int = 1, label: str = ""
) -> Paired:
    """Deterministic samples wobbling by up to ``spread`` around ``ms``."""
    return Paired(
        name,
        bs,
        tuple(ms * (1.0 + spread * ((i * 7919) % 11 - 5) / 5) for i in range(rounds)),
        label,
    )


def test_a_moved_pick_is_re_verified_against_every_other_participant() -> None:
    """When the pick moves, the new pick is judged against everyone from the same rounds and
    moves on to one that beats both it and the original pick."""
    v = judge(
        _steady("eager", 1.3), (_steady("aot", 1.1), _steady("ort", 1.0)), "latency", seconds=3.0
    )
    assert (v.selected, v.outcome) == ("ort", "clear")
    assert sorted((c.challenger, c.verdict) for c in v.standing) == [
        ("aot", "win"),
        ("eager", "win"),
    ]
    assert "selected ort@1 instead; against aot@1: 1.100× [1.100, 1.100]" in (v.reason)


def test_a_batch_size_point_estimate_alone_no_longer_moves_the_pick() -> None:
    """The winner at another batch size 3 % cheaper by its point but with an interval that
    straddles the margin keeps the pick (same rule as a backend), and the line says the
    budget ran out undecided."""
    here = _noisy("ort", 8.0, 12, 0.0, bs=8)
    there = _noisy("ort", 8.0 * 0.97, 12, 0.08, bs=16, label="ort@16")
    v = judge(here, (there,), "latency", seconds=3.0, budget=(3.0, 9.0))
    assert v.comparisons[0].speedup < 1 / 1.01 and v.comparisons[0].verdict == "undecided"
    assert v.holds and v.outcome == "leaning"
    assert (
        ": budget spent (3.0 s asked, up to 9.0 s while a challenger leans beyond it): " in v.reason
    )


def test_an_interval_that_cannot_reach_the_margin_is_settled_not_clear() -> None:
    """A challenger that cannot beat the pick beyond the margin, with an interval wider than
    it, stops the verification as settled: the line does not call it clear."""
    v = judge(_noisy("a", 1.0, 20, 0.0), (_noisy("b", 1.02, 20, 0.04),), "latency", seconds=1.0)
    assert v.holds and v.outcome == "settled" and ": settled (" in v.reason
    assert "clear" not in v.reason
