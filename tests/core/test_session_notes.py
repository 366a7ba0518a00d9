"""The session's notes: values the session keeps and the record stores, rendered to the
lines the tune logged before they were values."""

from __future__ import annotations

import json
from dataclasses import fields, replace
from typing import Any, get_type_hints

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyrsistent import pmap
from returns.result import Success

from aitune_fp.core.record.note_log import decode_notes, encode_notes
from aitune_fp.core.record.run_record import RunRecord, dumps, loads
from aitune_fp.core.records import Profile
from aitune_fp.core.report.markdown import render_markdown
from aitune_fp.core.report.notes import note_lines, render
from aitune_fp.core.session import Profiled, Say, SessionPlan, start, step
from aitune_fp.core.session.notes import (
    NOTE_TYPES,
    BuildAheadFailed,
    DroppedInRace,
    LeftTiming,
    NewBest,
    NoFinalRounds,
    Note,
    NoVerification,
    RoundsEnded,
    RoundsReduced,
    RoundsStarted,
    Settled,
    Skipped,
    VerificationPlanned,
    VerificationTiming,
    VerificationUntimed,
    VerificationVerdict,
)
from aitune_fp.core.session.racing import RaceLoss
from aitune_fp.core.session.replay import commands_of
from aitune_fp.core.strategies import max_throughput, min_latency
from aitune_fp.core.strategy import Strategy
from aitune_fp.testing.simulated import SimulatedMachine
from tests.core.test_session_laws import machines, recorded, strategies_any

LOSS = RaceLoss(0.3333, 0.31, 0.35, "fast", 4, 0.01)
TODAY: tuple[tuple[Note, str], ...] = (
    (NewBest("ort", 912222.354, ".2f", "samples/s"), "new best: ort (912222.35 samples/s)"),
    (Skipped("trt", "not admitted by min_latency"), "skipping trt: not admitted by min_latency"),
    (DroppedInRace("slow", LOSS),
     "slow dropped in the race: 0.333× [0.310, 0.350] against fast@4 (beyond the 1% margin)"),
    (Settled("min_latency"), "min_latency settled: later candidates are not built"),
    (BuildAheadFailed("aot", "worker died"),
     "building aot ahead failed (its own build follows): worker died"),
    (LeftTiming("ort", "verify", "no live runner"), "ort leaves the verification: no live runner"),
    (LeftTiming("ort", "rounds", "gone"), "ort leaves the final rounds: gone"),
    (NoFinalRounds("one contender"), "no final rounds: one contender"),
    (RoundsStarted(("eager", "a", "b")), "final rounds: eager, a, b"),
    (RoundsReduced("b is clearly slower"), "b is clearly slower"),
    (RoundsEnded("clear", 1.25), "final rounds: clear (1.2 s)"),
    (VerificationPlanned("ort", 64, ("aot", "ort@32"), 2.0),
     "verification: ort@64 against aot, ort@32 for 2 s"),
    (VerificationTiming("cap reached"), "verification timing: cap reached"),
    (VerificationVerdict(True, "clear: ort@64 holds"), "clear: ort@64 holds"),
    (NoVerification("the winner or its runner-ups have no live runner"),
     "no verification: the winner or its runner-ups have no live runner"),
    (VerificationUntimed("cap"), "no verification: fewer than two backends could be timed (cap)"),
)  # fmt: skip
"""One note of every kind and the exact line the tune logged for it before notes."""

BARE = RunRecord("m", "cpu", pmap(), None, (), None, None, pmap(), pmap(), None)
"""A run record with nothing in it."""
one_line_texts = st.text(
    st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1, max_size=12
)
FORMATS = st.sampled_from((".2f", ".3f", ".4g", "g"))
finite = st.floats(allow_nan=False, allow_infinity=False, width=32)
_BY_TYPE: dict[Any, st.SearchStrategy[Any]] = {
    str: one_line_texts,
    float: finite,
    int: st.integers(1, 4096),
    bool: st.booleans(),
    tuple[str, ...]: st.lists(one_line_texts, min_size=1, max_size=3).map(tuple),
    RaceLoss: st.builds(RaceLoss, finite, finite, finite, one_line_texts,
                        st.integers(1, 64), finite),
}  # fmt: skip


def _of_kind(kind: type[Note]) -> st.SearchStrategy[Note]:
    """Notes of one kind, each field drawn by its type (a new kind is drawn unasked)."""
    hints = get_type_hints(kind)
    drawn = {f.name: _BY_TYPE[hints[f.name]] for f in fields(kind)}
    return st.builds(kind, **{**drawn, **({"fmt": FORMATS} if "fmt" in drawn else {})})


notes = st.one_of(*(_of_kind(k) for k in NOTE_TYPES))


def test_every_kind_of_note_has_its_line_pinned() -> None:
    """The pinned lines cover every kind of note (a new kind needs its line here)."""
    assert {type(n) for n, _ in TODAY} == set(NOTE_TYPES)


@pytest.mark.parametrize(("note", "line"), TODAY)
def test_a_note_renders_to_the_line_the_tune_logged_before(note: Note, line: str) -> None:
    """Each kind of note renders to exactly the line the session said as text before."""
    assert render(note) == line


@given(notes)
def test_every_note_renders_to_one_non_empty_line(note: Note) -> None:
    """Any note whose texts are single lines renders to one non-empty line."""
    assert len(render(note).splitlines()) == 1 and render(note).strip()


@given(st.lists(notes, max_size=4).map(tuple))
def test_notes_round_trip_through_the_codec_and_the_record(said: tuple[Note, ...]) -> None:
    """decode(encode(notes)) == notes, through strict JSON text too, and a record keeps them."""
    assert decode_notes(json.loads(json.dumps(encode_notes(said))), "notes") == said
    record = replace(BARE, notes=said)
    assert loads(dumps(record)) == record


def test_a_record_without_notes_reads_as_none_and_is_written_without_them() -> None:
    """An older record (no ``notes`` key) reads as no notes and is written back alike; a bad
    note is refused in one line naming its path."""
    record = BARE
    assert "notes" not in json.loads(dumps(record)) and loads(dumps(record)).notes == ()
    bad = {**json.loads(dumps(record)), "notes": [{"note": "skipped", "name": "a", "why": 3}]}
    with pytest.raises(ValueError, match=r"^run record.notes\[0\].why: expected a string"):
        loads(json.dumps(bad))


@settings(max_examples=40)
@given(machines(), strategies_any(), st.sampled_from((None, 1.0)))
def test_the_session_keeps_every_note_it_said_in_order(
    case: tuple[SimulatedMachine, tuple[str, ...]], strategy: Strategy, verify: float | None
) -> None:
    """``Session.notes`` is the notes of every ``Say`` the session gave, in order (a
    session driven by the simulated machine's event log)."""
    machine, names = case
    plan = SessionPlan(strategy, names, verify_seconds=verify)
    session, commands, _ = commands_of(plan, recorded(plan, machine)[2])
    assert session.notes == tuple(c.note for c in commands if isinstance(c, Say))


def test_the_race_keeps_its_evidence_and_a_new_best_its_figure() -> None:
    """A raced session's drop carries its evidence (who, against whom, at which size, the
    margin), and a step's new best its metric, rendered as the strategy writes it."""
    ladder = (1, 2, 4, 8, 16)
    sim = SimulatedMachine({"eager": 4.0, "fast": 1.0, "slow": 3.0}, batch_sizes=ladder,
                           max_rounds=40, seed=3)  # fmt: skip
    plan = SessionPlan(max_throughput, ("fast", "slow"), ladder=ladder)
    session = commands_of(plan, recorded(plan, sim)[2])[0]
    drop = next(n for n in session.notes if isinstance(n, DroppedInRace))
    assert (drop.name, drop.evidence.against, drop.evidence.margin) == ("slow", "fast", 0.01)
    s, _ = start(SessionPlan(min_latency, ("a",)))
    s, _ = step(s, Profiled("eager", Success(Profile("eager", {1: [2.0]})), live=True))
    s, _ = step(s, Profiled("a", Success(Profile("a", {1: [1.0]})), live=True))
    assert [render(n) for n in s.notes] == ["new best: a (1.000 ms)"]


def test_the_report_shows_the_notes_warnings_marked() -> None:
    """The Markdown report has a Notes section listing each note's line (a warning marked),
    and none when the session said nothing."""
    said = (Skipped("trt", "not admitted"), BuildAheadFailed("aot", "oom"))
    record = replace(BARE, notes=said)
    assert note_lines(said) == (
        "skipping trt: not admitted",
        "warning: building aot ahead failed (its own build follows): oom",
    )
    shown = render_markdown(record)
    assert "## Notes\n\n- skipping trt: not admitted\n- warning: building aot" in shown
    assert "## Notes" not in render_markdown(replace(record, notes=()))
