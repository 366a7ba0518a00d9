"""Run records: JSON round trips, checked decoding, and offline re-selection."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Success

from aitune_fp import latency_budget, max_throughput, min_latency, tune
from aitune_fp.core.record.run_record import (
    BackendOutcome,
    RunRecord,
    as_candidates,
    baseline_candidate,
    decode,
    dumps,
    encode,
    loads,
    reselect,
    with_strategy,
)
from aitune_fp.core.records import BackendFailure, Profile
from aitune_fp.core.strategy import Strategy
from aitune_fp.testing import shipped_strategies
from tests.core.run_record_strategies import run_records


def _record(**fields: Any) -> RunRecord:
    base: dict[str, Any] = {
        "model": "m",
        "device": "cpu",
        "strategy": {"strategy": "max_throughput"},
        "baseline": None,
        "candidates": (),
        "selection": None,
        "error": None,
        "environment": {},
        "input_spec": {},
        "max_batch_size": None,
    }
    return RunRecord(**{**base, **fields})


def _ok(name: str, latencies: dict[int, list[float]]) -> BackendOutcome:
    return BackendOutcome(name, name, "k", {}, profile=Profile(name, latencies))


@given(run_records())
def test_decode_inverts_encode(record: RunRecord) -> None:
    """decode(encode(r)) == r for every generated record."""
    assert decode(encode(record)) == record


@given(run_records())
def test_round_trip_keeps_raw_samples_equality_ignores(record: RunRecord) -> None:
    """Encoding the decoded record gives the same JSON, so raw samples survive too."""
    assert encode(decode(encode(record))) == encode(record)


@given(run_records())
def test_json_text_is_strict_and_round_trips(record: RunRecord) -> None:
    """dumps writes strict JSON (no NaN/Infinity literals) and loads reads it back equal."""
    text = dumps(record)
    json.loads(text, parse_constant=lambda c: pytest.fail(f"non-strict constant {c}"))
    assert loads(text) == record


@given(run_records())
def test_reselect_with_the_stored_strategy_reproduces_the_selection(record: RunRecord) -> None:
    """Re-running the fold on the stored candidates with the run's strategy gives its result."""
    from aitune_fp.core.strategies.registry import strategy_from_config

    strategy = strategy_from_config(record.strategy)
    again = reselect(decode(encode(record)), strategy)
    assert again.value_or(None) == record.selection
    assert again.swap().value_or(None) == record.error


@given(run_records(), shipped_strategies(validate_performance=None))
def test_reselect_equals_tune_on_the_stored_profiles(record: RunRecord, strategy: Strategy) -> None:
    """reselect is exactly tune over as_candidates and baseline_candidate."""
    assert reselect(record, strategy) == tune(
        strategy, as_candidates(record), baseline_candidate(record)
    )


@given(run_records(), shipped_strategies(validate_performance=None))
def test_with_strategy_stores_the_new_decision(record: RunRecord, strategy: Strategy) -> None:
    """with_strategy keeps the measurements and stores the new strategy's selection or error."""
    new = with_strategy(record, strategy)
    outcome = reselect(record, strategy)
    assert new.candidates == record.candidates and new.baseline == record.baseline
    assert new.selection == outcome.value_or(None)
    assert new.error == outcome.swap().value_or(None)
    assert new.strategy["strategy"] == strategy.name
    assert decode(encode(new)) == new


def _mutations(value: Any) -> list[Any]:
    return [None, True, 1, -1, 1.5, "x", [], {}, [value], {"k": value}]


@given(run_records(), st.data())
def test_decode_of_a_corrupted_record_is_a_value_error_or_a_record(
    record: RunRecord, data: st.DataObject
) -> None:
    """Replacing any one value of the JSON by a wrong one never raises anything but ValueError."""
    doc = encode(record)
    paths: list[tuple[Any, Any]] = []

    def walk(node: Any) -> None:
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, child in items:
            paths.append((node, key))
            if isinstance(child, dict | list):
                walk(child)

    walk(doc)
    parent, key = data.draw(st.sampled_from(paths))
    parent[key] = data.draw(st.sampled_from(_mutations(parent[key])))
    try:
        decoded = decode(doc)
    except ValueError as error:
        assert str(error).startswith("run record")
    else:
        assert isinstance(decoded, RunRecord)


def test_every_record_field_is_written() -> None:
    """Each record's JSON holds exactly its dataclass fields (a record with its optional
    plan, re-verification and a note: each is written only when kept), so no new field is
    dropped."""
    import dataclasses

    from aitune_fp.core.accuracy.reach import LeftOut
    from aitune_fp.core.record.json_codec import to_json
    from aitune_fp.core.record.plan_record import PlanRecord
    from aitune_fp.core.record.provenance import Provenance
    from aitune_fp.core.record.run_record import encode_outcome
    from aitune_fp.core.records import (
        BackendPerfResult,
        BackendProfilingResult,
        MeasuredBatch,
        Selection,
        TuneError,
    )
    from aitune_fp.core.session.notes import Settled
    from aitune_fp.core.verification.judge import Verification

    result = BackendProfilingResult(1.0, 1, 1.0, 1.0)
    cases: list[tuple[Any, dict[str, Any]]] = [
        (Profile, to_json(Profile("a", {1: [1.0]}))),
        (MeasuredBatch, to_json(MeasuredBatch(1, "fixed: 1 warm-up calls", (2.0,)))),
        (BackendFailure, to_json(BackendFailure("a", "build", "m"))),
        (BackendProfilingResult, to_json(result)),
        (BackendPerfResult, to_json(BackendPerfResult("a", 1.0, 1.0, 1.0, True))),
        (Selection, to_json(Selection("a", result, False))),
        (TuneError, to_json(TuneError("m"))),
        (BackendOutcome, encode_outcome(BackendOutcome("a", "a", "k", {}))),
        (
            RunRecord,
            encode(
                dataclasses.replace(
                    _record(),
                    plan=PlanRecord(("a",)),
                    notes=(Settled("min_latency"),),
                    reverification=Verification(True, "a", "b", 1.0, (0.9, 1.1), 1.0),
                    left_out=(LeftOut("b", "bfloat16", "not native"),),
                )
            ),
        ),
        (Provenance, to_json(Provenance({"model": "m"}, "run.json"))),
    ]
    for cls, encoded in cases:
        assert set(encoded) == {f.name for f in dataclasses.fields(cls)}, cls.__name__


def test_decode_names_the_path_of_a_missing_field() -> None:
    """A missing nested field is reported with its full path."""
    doc = encode(_record(candidates=(_ok("ort", {1: [1.0]}),)))
    del doc["candidates"][0]["profile"]["backend"]
    with pytest.raises(ValueError, match=r"run record\.candidates\[0\]\.profile: missing field"):
        decode(doc)


def test_decode_refuses_a_newer_schema_and_a_foreign_document() -> None:
    """An unknown schema version and a document without one are refused by name."""
    doc = encode(_record())
    with pytest.raises(ValueError, match="schema_version 3 is not supported"):
        decode({**doc, "schema_version": 3})
    with pytest.raises(ValueError, match="not an aitune_fp run record"):
        decode({"model": "m"})


def test_decode_reports_record_invariants_with_their_path() -> None:
    """A latency the Profile refuses is reported under the profile's path."""
    doc = encode(_record(candidates=(_ok("ort", {1: [1.0]}),)))
    doc["candidates"][0]["profile"]["latencies_ms"]["1"] = [-1.0]
    with pytest.raises(ValueError, match=r"candidates\[0\]\.profile: latencies must be finite"):
        decode(doc)


def test_decode_refuses_a_non_integer_batch_size_key() -> None:
    """Batch sizes must be decimal integer keys."""
    doc = encode(_record(candidates=(_ok("ort", {1: [1.0]}),)))
    doc["candidates"][0]["profile"]["latencies_ms"] = {"one": [1.0]}
    with pytest.raises(ValueError, match=r"latencies_ms: a key: expected an integer, got a string"):
        decode(doc)


def test_outcome_refuses_both_a_profile_and_a_failure() -> None:
    """An outcome is a profile or a failure, never both."""
    with pytest.raises(ValueError, match="both a profile and a failure"):
        BackendOutcome(
            "x", "x", "k", {}, Profile("x", {1: [1.0]}), BackendFailure("x", "build", "no")
        )


def test_record_refuses_repeated_candidate_names() -> None:
    """Candidate names identify backends, so a repeated one is refused."""
    with pytest.raises(ValueError, match="repeated: \\['a'\\]"):
        _record(candidates=(_ok("a", {1: [1.0]}), _ok("a", {1: [2.0]})))


def test_free_form_maps_are_stored_canonically() -> None:
    """Lists become tuples, non-finite floats their JSON names, odd leaves their str()."""
    o = BackendOutcome("a", "a", "k", {"t": [1, (2, 3)], "x": math.inf, "p": object})
    assert o.config["t"] == (1, (2, 3))
    assert o.config["x"] == "Infinity"
    assert o.config["p"] == "<class 'object'>"
    assert hash(o) == hash(
        BackendOutcome("a", "a", "k", {"t": (1, [2, 3]), "x": math.inf, "p": object})
    )


def test_non_finite_validation_errors_survive_strict_json() -> None:
    """An infinite or NaN validation error is written as a name and read back as the float."""
    o = BackendOutcome("a", "a", "k", {}, validation={"inf": math.inf, "nan": math.nan})
    back = loads(dumps(_record(candidates=(o,)))).candidates[0].validation
    assert back["inf"] == math.inf and math.isnan(back["nan"])


def test_as_candidates_keeps_order_and_drops_backends_never_run() -> None:
    """Candidates come back in order as Success/Failure; never-run ones are dropped."""
    fail = BackendOutcome("b", "b", "k", {}, failure=BackendFailure("b", "build", "boom"))
    never = BackendOutcome("c", "c", "k", {})
    rec = _record(candidates=(_ok("a", {1: [1.0]}), fail, never))
    got = as_candidates(rec)
    assert [type(c) for c in got] == [Success, Failure]
    assert got[1].failure().message == "boom"


def test_reselect_with_another_strategy_changes_the_decision() -> None:
    """A run where one backend wins on throughput and another on latency re-selects offline."""
    wide = _ok("wide", {1: [4.0], 8: [8.0]})  # best throughput: 1000/s at 8
    quick = _ok("quick", {1: [1.0], 8: [16.0]})  # best latency: 1 ms at 1
    base = _ok("eager", {1: [5.0], 8: [40.0]})
    rec = _record(baseline=base, candidates=(wide, quick))
    assert reselect(rec, max_throughput).unwrap().backend == "wide"
    assert reselect(rec, min_latency).unwrap().backend == "quick"
    assert reselect(rec, latency_budget(0.5)).failure().message.startswith("no backend meets")


def test_provenance_round_trips_and_an_older_record_reads_as_not_reused() -> None:
    """A record's baseline keys and reuse source survive encode/decode; a record without a
    provenance object (written before it existed) reads as no keys, not reused."""
    from aitune_fp.core.record.provenance import Provenance

    record = _record(provenance=Provenance({"model": "abc", "device": "cpu"}, "/old/run.json"))
    back = loads(dumps(record))
    assert back == record and back.provenance.baseline_reused_from == "/old/run.json"
    assert dict(back.provenance.baseline_keys) == {"model": "abc", "device": "cpu"}
    doc = encode(record)
    del doc["provenance"]
    assert decode(doc).provenance == Provenance()
