"""One account of the decision: every figure shown for a selection agrees (issue 21, part 4)."""

from __future__ import annotations

from hypothesis import event, given
from returns.result import Success

from aitune_fp import Profile, confident, max_throughput
from aitune_fp.core.laws.account import ACCOUNT_LAWS
from aitune_fp.core.record.run_record import RunRecord
from aitune_fp.core.report.account import decision_account
from aitune_fp.core.report.decision import decision_lines
from aitune_fp.core.report.gap import gaps
from aitune_fp.core.report.markdown import render_markdown
from aitune_fp.core.report.sources import ROUNDS, SWEEP
from aitune_fp.core.report.tables import backend_rows
from aitune_fp.testing import Timings, decide, decided_runs
from tests.core.run_record_strategies import run_records
from tests.core.shares import share

DRIFT = (1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 1.01, 0.99)
STRATEGY = confident(max_throughput, resamples=200)


def _broken(record: RunRecord) -> list[str]:
    return [law.name for law in ACCOUNT_LAWS if not law.holds(record)]


@given(decided_runs())
def test_every_law_of_the_account_holds_after_rounds_and_verification(record: RunRecord) -> None:
    """For any run decided through final rounds and a verification, the selected figure,
    speedup, decision lines, table row and Markdown report agree (every account law)."""
    event(f"verification moved the pick: {_moved(record)}")
    event(f"baseline measured: {_measured(record)}")
    event(f"sweep and verification disagree beyond noise: {_disagree(record)}")
    assert _broken(record) == []


def _moved(record: RunRecord) -> bool:
    v = record.verification
    return v is not None and not v.holds


def _measured(record: RunRecord) -> bool:
    return record.baseline is not None and record.baseline.profile is not None


def _disagree(record: RunRecord) -> bool:
    return any(g.beyond_noise for g in gaps(record))


def test_the_generator_makes_pick_moving_verifications_and_baselines_common() -> None:
    """Of the seeded decided runs, at least 10 % have a verification that moved the pick,
    30 % a measured baseline and 10 % an earlier measurement the verification contradicts
    beyond noise, so the account laws see all three often."""
    assert share(decided_runs(), _moved) >= 0.10
    assert share(decided_runs(), _measured) >= 0.30
    assert share(decided_runs(), _disagree) >= 0.10


@given(run_records())
def test_every_law_of_the_account_holds_for_stored_runs(record: RunRecord) -> None:
    """For any stored run (sweeps, round samples, fallbacks, errors), every account law holds."""
    assert _broken(record) == []


def _profile(
    name: str, sweep: dict[int, float], rounds: dict[int, float] | None = None
) -> Success[Profile]:
    """A profile with 5 sweep calls per batch size at ``sweep`` ms (and rounds at ``rounds``)."""
    rounds_ms = {bs: [ms * k for k in DRIFT[:6]] for bs, ms in (rounds or {}).items()}
    return Success(Profile(name, {bs: [ms] * 5 for bs, ms in sweep.items()}, rounds_ms=rounds_ms))


def test_a_pick_moved_by_the_verification_is_never_a_lower_figure_called_a_speedup() -> None:
    """The issue's transformer: the verification moves aot_inductor from batch 32 to 64 and
    eager was not timed there; the selected row and lines show batch 64, both figures from
    the one measurement holding both (the sweep), their ratio, and why it is below 1."""
    eager = _profile("eager", {1: 1.0, 16: 1.72})
    aot = _profile("aot_inductor", {1: 0.5, 32: 3.2, 64: 9.3})
    timings = Timings(
        rounds={"eager": tuple(1.72 * k for k in DRIFT[:6]),
                "aot_inductor": tuple(3.0 * k for k in DRIFT[:6])},
        verification={("aot_inductor", 32): tuple(3.0 * k for k in DRIFT),
                      ("aot_inductor", 64): tuple(5.6 * k for k in DRIFT)},
    )  # fmt: skip
    record = decide(STRATEGY, [aot], eager, timings)
    assert record.verification is not None and not record.verification.holds
    account = decision_account(record)
    assert account is not None and account.baseline is not None
    assert (account.selected.at, account.baseline.at, account.source) == (
        "aot_inductor@64",
        "eager@16",
        SWEEP,
    )
    row = next(r for r in backend_rows(record) if r.status == "selected")
    assert (row.batch_size, row.metric, row.speedup) == (
        64,
        account.selected.value,
        account.speedup,
    )
    assert account.speedup == account.selected.value / account.baseline.value < 1.0
    lines = decision_lines(record)
    assert lines[0].startswith("Selected aot_inductor (batch size 64): throughput 6881.72")
    assert lines[1].startswith("Speedup: 9302.33 samples/s → 6881.72 samples/s (0.74×)")
    why = next(line for line in lines if line.startswith("Why below 1.00×"))
    assert "eager@16 was not timed in the verification" in why and "chain to 1.23×" in why
    assert _broken(record) == []


def test_a_row_never_pairs_a_sweep_metric_with_a_rounds_speedup() -> None:
    """The issue's second report: onnxruntime selected at 1.75× beside aot_inductor at 1.74×
    with twice its sweep throughput; every row now shows its metric and speedup from the
    final rounds, so the higher speedup goes with the higher figure."""
    eager = _profile("eager", {8: 8000 / 55000}, rounds={8: 8000 / 55000})
    ort = _profile("onnxruntime", {16: 16000 / 95412}, rounds={16: 16000 / 55000 / 1.75})
    aot = _profile("aot_inductor", {64: 64000 / 202129}, rounds={64: 64000 / 55000 / 1.74})
    record = decide(STRATEGY, [ort, aot], eager)
    rows = {r.backend: r for r in backend_rows(record)}
    assert rows["onnxruntime"].status == "selected"
    assert {r.source for r in rows.values()} == {ROUNDS}
    base = rows["eager"].metric
    assert base is not None
    for row in rows.values():
        assert row.metric is not None and row.speedup is not None
        assert abs(row.speedup - row.metric / base) < 1e-9 * row.speedup
    assert rows["onnxruntime"].metric > rows["aot_inductor"].metric  # type: ignore[operator]
    assert "- Speedup: 55000.00 samples/s → 96250.00 samples/s (1.75×)" in render_markdown(record)
    assert _broken(record) == []


def test_the_verification_line_names_backends_with_their_batch_sizes() -> None:
    """The issue's third line: onnxruntime at batch 16 verified against itself at batch 8
    reads ``onnxruntime@16 holds against onnxruntime@8``."""
    eager = _profile("eager", {8: 4.0})
    ort = _profile("onnxruntime", {8: 1.0, 16: 1.9})
    verification = {
        ("onnxruntime", 16): tuple(1.9 * k for k in DRIFT),
        ("onnxruntime", 8): tuple(1.0 * 1.061 * k for k in DRIFT),
    }
    record = decide(max_throughput, [ort], eager, Timings(verification=verification))
    line = next(x for x in decision_lines(record) if x.startswith("verification"))
    assert "onnxruntime@16 holds against onnxruntime@8: 1.117×" in line
    assert "onnxruntime holds against onnxruntime" not in line
    assert _broken(record) == []


def test_a_baseline_moved_to_another_batch_size_is_measured_against_itself() -> None:
    """The demo's transformer on a busy machine: eager kept, then moved from batch 16 to 32
    by the verification; the selected row, the lines and the baseline reference all come
    from the verification (eager@16 → eager@32), not the sweep's 16 beside the pick's 32."""
    eager = _profile("eager", {16: 2.6, 32: 5.6})
    inductor = _profile("inductor", {32: 5.0})
    timings = Timings(
        rounds={"eager": tuple(4.0 * k for k in DRIFT[:6]),
                "inductor": tuple(8.8 * k for k in DRIFT[:6])},
        verification={("eager", 16): tuple(3.9 * k for k in DRIFT),
                      ("eager", 32): tuple(7.2 * k for k in DRIFT),
                      ("inductor", 32): tuple(8.0 * k for k in DRIFT)},
    )  # fmt: skip
    record = decide(STRATEGY, [inductor], eager, timings)
    assert record.selection is not None and record.selection.fell_back_to_baseline
    rows = {r.backend: r for r in backend_rows(record)}
    assert (rows["eager"].status, rows["eager"].batch_size, rows["eager"].source) == (
        "selected",
        32,
        "verification",
    )
    lines = decision_lines(record)
    assert lines[1] == (
        "Speedup: 4102.56 samples/s → 4444.44 samples/s (1.08×): eager@16 → eager@32, "
        "both measured in the verification"
    )
    assert rows["inductor"].speedup is not None and rows["inductor"].speedup < 1.0
    verified = next(line for line in lines if line.startswith("verification"))
    assert "eager@16 does not hold: eager@32 is faster" in verified
    assert _broken(record) == []


def test_a_baseline_moved_in_by_the_verification_still_states_each_earlier_disagreement() -> None:
    """Seed 777's run: the sweep showed inductor and onnxruntime at twice eager, the
    verification moved the pick to eager and found onnxruntime level with it; onnxruntime's
    Why-not line compares the verification with itself, so the sweep's disagreement with
    the verification over eager and onnxruntime is still stated on the gap line."""
    eager = _profile("eager", {1: 1.0})
    given = [_profile(name, {1: 0.5}) for name in ("inductor", "onnxruntime", "tensorrt")]
    timings = Timings(
        verification={("inductor", 1): (0.9,) * 7 + (0.91,), ("onnxruntime", 1): (0.45,) * 8,
                      ("tensorrt", 1): (0.45,) * 8, ("eager", 1): (0.45,) * 4 + (0.455,) * 4},
    )  # fmt: skip
    record = decide(confident(max_throughput, resamples=50), given, eager, timings)
    assert record.verification is not None and record.verification.selected == "eager"
    said = [x for x in decision_lines(record) if "disagree beyond noise" in x]
    assert any("eager@1 over onnxruntime@1: 0.500× in the sweep" in x for x in said)
    assert _broken(record) == []


def test_the_front_places_a_pick_moved_to_another_batch_size_at_its_speedup() -> None:
    """The demo transformer's run: the verification moves aot_inductor from batch 32 to 64;
    the front gives the pick the Speedup line's figure, never a speed re-expressed through
    its own comparison with its earlier batch size (the front said 1.11× beside 1.23×)."""
    from dataclasses import replace

    from aitune_fp.core.report.pareto import trade_off

    exact = {"rms_rel_error": 0.0, "top1_agreement": 1.0}  # every row a point of the front
    eager = _profile("eager", {1: 1.0, 16: 1.72}).map(lambda p: replace(p, accuracy=exact))
    aot = _profile("aot_inductor", {1: 0.5, 32: 3.2, 64: 9.3}).map(
        lambda p: replace(p, accuracy=exact)
    )
    timings = Timings(
        rounds={"eager": tuple(1.72 * k for k in DRIFT[:6]),
                "aot_inductor": tuple(3.0 * k for k in DRIFT[:6])},
        verification={("aot_inductor", 32): tuple(3.0 * k for k in DRIFT),
                      ("aot_inductor", 64): tuple(5.6 * k for k in DRIFT)},
    )  # fmt: skip
    record = decide(STRATEGY, [aot], eager, timings)
    assert record.verification is not None and not record.verification.holds
    account = decision_account(record)
    assert account is not None and account.speedup is not None
    points = {p.name: p.speed for p in trade_off(record)[0]}
    assert points["aot_inductor"] == account.speedup
