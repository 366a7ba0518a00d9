"""The run record's msgspec codec: strict one-line errors, the non-finite rule, old versions,
and the round-trip law over records with every optional part (events, wall, searches)."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyrsistent import pmap
from returns.result import Success

from aitune_fp.core.record.max_batch import STOPS, MaxBatchSearch
from aitune_fp.core.record.plan_record import PlanRecord
from aitune_fp.core.record.run_record import (
    BackendOutcome,
    RunRecord,
    decode,
    dumps,
    encode,
    loads,
)
from aitune_fp.core.record.wall import WallAccount
from aitune_fp.core.records import Candidate, Profile
from aitune_fp.core.session.events import Event, Prebuilt, Profiled, Timed
from aitune_fp.core.session.facts import BuildFacts
from tests.core.run_record_strategies import run_records

OLD = Path(__file__).parent / "data" / "run_v1.json"
NAMES = ("NaN", "Infinity", "-Infinity")
seconds = st.floats(min_value=0.0, max_value=1e4)
texts = st.text(max_size=8)


def _put(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    """``doc`` (a JSON tree, copied) with the value at ``path`` replaced."""
    doc = json.loads(json.dumps(doc))
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return doc


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("candidates", 0, "profile", "latencies_ms", "1", 0), "1.0",
         "run record.candidates[0].profile.latencies_ms[...][0]: expected a number, got a string"),
        (("max_batch_size",), True,
         "run record.max_batch_size: expected an integer or null, got a boolean"),
        (("selection", "result", "selected_batch_size"), 1.5,
         "run record.selection.result.selected_batch_size: expected an integer, got a number"),
        (("events", 0, "profile", "backend"), 3,
         "run record.events[0].profile.backend: expected a string, got an integer"),
        (("wall", "stages", 0, "seconds"), None,
         "run record.wall.stages[0].seconds: expected a number, got null"),
        (("verification", "ci95"), [1.0],
         "run record.verification.ci95: expected an array of length 2, got 1"),
        (("candidates", 0, "profile", "batches"), {"x": {}},
         "run record.candidates[0].profile.batches: a key: expected an integer, got a string"),
    ],
)  # fmt: skip
def test_a_value_of_the_wrong_type_is_one_line_naming_its_path(
    path: tuple[Any, ...], value: Any, message: str
) -> None:
    """Strict decoding: no coercion (a string is no number, a boolean no integer), and the
    error is one line that names the path of the bad value."""
    doc = _put(json.loads(OLD.read_text()), path, value)
    with pytest.raises(ValueError) as error:
        decode(doc)
    assert str(error.value) == message and "\n" not in str(error.value)


@given(
    st.dictionaries(st.sampled_from(["max_abs", "max_rel"]), st.floats(), max_size=2),
    st.dictionaries(texts, st.sampled_from(NAMES), max_size=3),
    st.sampled_from(NAMES),
)
def test_non_finite_floats_are_names_and_names_in_text_fields_stay_text(
    errors: dict[str, float], config: dict[str, str], model: str
) -> None:
    """A float field's NaN or infinity is written as its name (strict JSON, no literal) and
    reads back as that float; the same names in a text field or a free-form map stay text."""
    outcome = BackendOutcome("a", "a", "k", config, validation=errors)
    record = RunRecord(model, "cpu", {}, None, (outcome,), None, None, {}, {}, None)
    text = dumps(record)
    json.loads(text, parse_constant=lambda c: pytest.fail(f"non-strict constant {c}"))
    back = loads(text)
    assert back.model == model and dict(back.candidates[0].config) == config
    got = back.candidates[0].validation
    assert set(got) == set(errors)
    for key, value in errors.items():
        assert got[key] == value or (math.isnan(got[key]) and math.isnan(value))


def _with_generation_field(tree: Any) -> Any:
    """``tree`` with ``"generation": null`` in every profile (a field added after the
    fixture was written: absent, it reads as its default, ``None``)."""
    if isinstance(tree, dict):
        out = {k: _with_generation_field(v) for k, v in tree.items()}
        return {**out, "generation": None} if "latencies_ms" in out else out
    if isinstance(tree, list):
        return [_with_generation_field(v) for v in tree]
    return tree


def test_a_version_1_record_reads_and_is_rewritten_with_the_same_shape() -> None:
    """A run.json written by the codec before msgspec (schema_version 1, stored as a
    fixture) reads, and written again it is the same JSON apart from the version and the
    profiles' later ``generation`` field (null)."""
    old = json.loads(OLD.read_text())
    record = loads(OLD.read_text())
    assert len(record.events) == 4 and record.wall is not None and record.verification
    assert record.candidates[0].validation["max_abs_error"] == math.inf
    again = json.loads(dumps(record))
    assert again.pop("schema_version") == 2 and old.pop("schema_version") == 1
    assert again == _with_generation_field(old)


def test_an_unknown_version_is_refused_in_one_line_naming_it() -> None:
    """A record of a version this aitune_fp does not read is refused by one line naming the
    version and the versions read."""
    with pytest.raises(ValueError) as error:
        loads(json.dumps({**json.loads(OLD.read_text()), "schema_version": 3}))
    assert str(error.value) == (
        "run record: schema_version 3 is not supported (this aitune_fp reads 1 and 2)"
    )


def _profiled(outcome: BackendOutcome, live: bool, took: float) -> Event:
    """The event that measured ``outcome`` (a profile or a failure), with its facts."""
    built: Candidate = Success(outcome.profile) if outcome.profile is not None else _failed(outcome)
    o = outcome
    facts = BuildFacts(o.kind, o.key, o.config, o.stage_seconds, o.validation, o.artifact)
    return Profiled(outcome.backend, built, live, took, facts)


def _failed(outcome: BackendOutcome) -> Candidate:
    from returns.result import Failure

    from aitune_fp.core.records import BackendFailure

    return Failure(outcome.failure or BackendFailure(outcome.backend, "build", "never run"))


@st.composite
def full_records(draw: st.DrawFn) -> RunRecord:
    """A generated run record with an event log, a wall account, a max-batch search and
    the session's plan."""
    record: RunRecord = draw(run_records())
    profiled = [_profiled(o, draw(st.booleans()), draw(seconds)) for o in record.outcomes]
    samples = st.dictionaries(texts, st.lists(seconds, max_size=3).map(tuple), max_size=3)
    timed = Timed(draw(texts), pmap(draw(samples)), draw(st.integers(0, 9)), draw(texts),
                  draw(seconds))  # fmt: skip
    built = Prebuilt(draw(seconds), pmap(draw(st.dictionaries(texts, texts, max_size=2))))
    events = draw(st.permutations([*profiled, timed, built]))
    wall = WallAccount(draw(seconds), tuple(draw(st.lists(st.tuples(texts, seconds), max_size=3))))
    search = MaxBatchSearch(draw(st.sampled_from(STOPS)), draw(texts),
                            draw(st.one_of(st.none(), st.integers(1, 64))))  # fmt: skip
    names = tuple(draw(st.lists(texts, max_size=3)))
    reused = draw(st.sampled_from([None, *(o.profile for o in record.outcomes)]))
    ladder = tuple(draw(st.lists(st.integers(1, 64), max_size=3)))
    plan = PlanRecord(names, draw(texts), draw(st.booleans()), draw(st.one_of(st.none(), seconds)),
                      reused, pmap(draw(st.dictionaries(texts, texts, max_size=2))), names[:1],
                      draw(st.integers(0, 4)), ladder)  # fmt: skip
    return replace(record, events=tuple(events), wall=wall, max_batch_search=search, plan=plan)


@given(full_records())
def test_read_of_encode_is_the_identity_with_every_optional_part(record: RunRecord) -> None:
    """loads(dumps(r)) == r and decode(encode(r)) == r over records with events, a wall
    account and a max-batch search, and encoding the read record gives the same JSON."""
    assert loads(dumps(record)) == record
    assert decode(encode(record)) == record
    assert encode(decode(encode(record))) == encode(record)


def test_a_profile_key_is_read_as_an_integer_batch_size() -> None:
    """Batch sizes are integer keys in memory and decimal strings in the JSON."""
    record = loads(OLD.read_text())
    profile = record.candidates[0].profile
    assert isinstance(profile, Profile) and sorted(profile.latencies_ms) == [1, 4]
    assert set(encode(record)["candidates"][0]["profile"]["latencies_ms"]) == {"1", "4"}


def test_an_event_logged_before_facts_travelled_reads_with_empty_facts() -> None:
    """A ``profiled`` event without ``facts`` (an older log) decodes with the empty facts,
    and an event with empty facts is written without the key (older logs read the same)."""
    from aitune_fp.core.record.event_log import decode_event, encode_event

    event = Profiled("a", Success(Profile("a", {1: [1.0]})), True, 0.5)
    written = encode_event(event)
    assert "facts" not in written
    assert decode_event(written, "e") == event and decode_event(written, "e").facts == BuildFacts()
    told = replace(event, facts=BuildFacts("a", "k", {"x": 1}, {"build": 1.0}, {}, "a.pt", "ff"))
    assert decode_event(encode_event(told), "e") == told
