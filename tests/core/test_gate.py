"""The speed gate's judging (pure): when a re-measured pick fails against its figures."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from aitune_fp.core.report.check_report import check_json, junit_xml
from aitune_fp.core.verification.gate import Figures, judge_check, verdict_line

SAMPLES = st.lists(st.floats(0.5, 2.0), min_size=8, max_size=40)


@given(SAMPLES, st.floats(1.0, 3.0))
def test_a_pick_never_fails_on_its_own_figures_or_faster_ones(
    recorded: list[float], faster: float
) -> None:
    """The recorded samples, or all of them divided by a factor >= 1, never fail the gate."""
    figures = Figures("p", 1, tuple(recorded))
    assert judge_check(figures, recorded).passed
    assert judge_check(figures, [x / faster for x in recorded]).passed


@given(st.lists(st.floats(1.0, 1.05), min_size=8, max_size=40), st.floats(1.2, 3.0))
def test_every_sample_slower_beyond_the_margin_fails(recorded: list[float], slower: float) -> None:
    """Tight figures, every one multiplied by 1.2 or more (their spread aside, beyond the
    10 % margin): a loss, the gate fails and its line, JUnit case and JSON say so."""
    result = judge_check(Figures("p", 2, tuple(recorded)), [x * slower for x in recorded])
    assert result.speed == "loss" and not result.passed
    assert verdict_line(result).startswith("check FAILED: p at batch 2 is slower")
    assert 'failures="1"' in junit_xml(result) and check_json(result)["passed"] is False


def test_a_pick_no_longer_correct_fails_whatever_its_speed() -> None:
    """A wrong pick fails even at its recorded speed, the reason in its line."""
    figures = Figures("p", 1, (1.0,) * 10)
    result = judge_check(figures, (1.0,) * 10, wrong="max abs error 3.2 > 1e-4")
    assert not result.passed and "no longer correct (max abs error" in verdict_line(result)
