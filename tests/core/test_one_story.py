"""One story per report (issue 32 §3): the demo transformer's case replayed, where the
sweep says A (eager bf16, 2.79×) and the verification says B (inductor bf16 freezing,
1.045× faster than A in paired rounds); every line of the report is read."""

from __future__ import annotations

from returns.result import Success

from aitune_fp import Profile, max_throughput
from aitune_fp.core.record.run_record import RunRecord
from aitune_fp.core.report.decision import decision_lines
from aitune_fp.core.report.markdown import render_markdown
from aitune_fp.core.report.pareto import front_line
from aitune_fp.testing import Timings, decide

A, B, BASE = "eager(precision='bfloat16')", "inductor(precision='bfloat16', freezing=True)", "eager"
BS = 8
WIGGLE = (1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 1.01, 0.99, 1.0, 1.02)


def _profile(name: str, speedup: float) -> Profile:
    ms = [BS * 1.0 / speedup * w for w in WIGGLE]
    return Profile(name, {BS: ms}, accuracy={"rms_rel_error": 0.004, "cosine": 0.9999})


def demo_case() -> RunRecord:
    """Sweep: A at 2.79×, B at 2.44× over eager; verification: B 1.045× faster than A."""
    given = [Success(_profile(A, 2.79)), Success(_profile(B, 2.44))]
    base = Success(_profile(BASE, 1.0))
    paired = {(A, BS): tuple(1.045 * w for w in WIGGLE), (B, BS): WIGGLE}
    return decide(max_throughput, given, base, Timings(verification=paired))


def test_the_verification_moves_the_pick_in_the_replayed_case() -> None:
    """The replayed record selects B after the verification overturned A."""
    record = demo_case()
    assert record.selection is not None and record.selection.backend == B
    assert record.verification is not None and not record.verification.holds


def test_no_line_of_the_report_tells_the_sweep_story_against_the_pick() -> None:
    """No line says A dominates the pick or that a tie kept the pick; the Why-not line
    gives the verification's figure, says the two measurements disagree beyond noise and
    that the pick rests on the verification; the Markdown report says the same."""
    record = demo_case()
    lines = decision_lines(record)
    front = front_line(record)
    everything = [*lines, front or "", render_markdown(record)]
    assert lines[0].startswith(f"Selected {B} (batch size {BS})")
    why_not = [line for line in lines if line.startswith("Why not")]
    assert len(why_not) == 1, lines
    assert f"Why not {A}@{BS}" in why_not[0] and "disagree beyond noise" in why_not[0]
    assert "1.045×" in why_not[0] and "rests on the verification" in why_not[0]
    assert not any("a tie keeps the pick" in text for text in everything), everything
    assert front is not None and f"by {A}:" not in front, front
    assert f"dominated by {A}" not in front
    assert why_not[0] in render_markdown(record)
