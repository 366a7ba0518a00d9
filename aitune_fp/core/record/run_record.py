"""A tuning run as data: what was tried, what each backend measured, what was selected.

Rules:
- a :class:`RunRecord` (frozen) holds every backend's config, raw latency samples, failure
  (stage, message), stage times and validation errors, the selection (or the error), the
  strategy's configuration and an environment fingerprint; free-form maps are stored
  canonically (:func:`freeze_json`): ``decode(encode(r)) == r``; ``decode`` checks
  ``schema_version`` and every field's type, a ``ValueError`` naming the first bad path;
- :func:`reselect` (``tune`` over ``as_candidates(r)``) re-selects offline: no model, no device;
- ``status`` ``complete``/``interrupted`` (written mid-run); ``options``: isolation, timeouts;
  ``verification``: did the re-measured pick hold (``None``: none ran), reselect drops it;
  ``provenance``: the baseline's keys, where a reused one came from (:mod:`.provenance`);
  ``max_batch_search``: how the max batch size was found (:mod:`.max_batch`); ``wall``:
  where the run's wall time went (:mod:`.wall`); ``events``: the session's event log,
  which replays the run (:mod:`.event_log`, :mod:`aitune_fp.core.session.replay`);
  ``notes``: what the session said, in order (:mod:`.note_log`; written only when there
  are any: an older record, without the field, reads as none and is written back alike).
  ``plan``: the session's plan as one value, its strategy aside (:mod:`.plan_record`;
  ``None`` in older records, whose plan is read back from ``options``).
  ``reverification``: a decision cache hit's new re-verification of the stored pick,
  beside the stored run's own ``verification`` (:mod:`.hit`; written only when there is one).
  ``left_out``: the candidates the plan left out as not native here, with reasons
  (:mod:`..accuracy.reach`; written only when any were: an older record reads as none).

Longer than 260 lines: the record's types and their re-selection are what ``run.json`` is;
split, the codec would import both halves.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Final

import msgspec
from pyrsistent import PMap, pmap
from returns.result import Failure, Result, Success

from aitune_fp.core.accuracy.reach import LeftOut
from aitune_fp.core.fold import tune
from aitune_fp.core.record.event_log import decode_events, encode_events
from aitune_fp.core.record.json_codec import decoded_fields, from_json, to_json
from aitune_fp.core.record.max_batch import MaxBatchSearch
from aitune_fp.core.record.note_log import decode_notes, encode_notes
from aitune_fp.core.record.plan_record import PlanRecord
from aitune_fp.core.record.provenance import Provenance
from aitune_fp.core.record.stages import encode_stages, without_null_stages
from aitune_fp.core.record.values import freeze_json, freeze_numbers
from aitune_fp.core.record.wall import WallAccount, encode_wall, read_wall
from aitune_fp.core.records import BackendFailure, Candidate, Profile, Selection, TuneError
from aitune_fp.core.session.events import Event
from aitune_fp.core.session.notes import Note
from aitune_fp.core.strategies.registry import strategy_config
from aitune_fp.core.strategy import Strategy
from aitune_fp.core.verification.verification_records import Verification

SCHEMA_VERSION: Final = 2
"""Version 2: written by msgspec (:mod:`.json_codec`); the shape is version 1's."""
READS: Final = (1, 2)
_ABSENT: Final[dict[str, Any]] = {
    "baseline": None,
    "selection": None,
    "error": None,
    "max_batch_size": None,
    "environment": {},
    "input_spec": {},
}
"""What an absent field reads as (as version 1 read it)."""


@dataclass(frozen=True, slots=True)
class BackendOutcome:
    """What happened to one backend: its config, and its profile or its failure (at most
    one; neither: never run, a strategy stopped consuming candidates before it).

    >>> o = BackendOutcome("onnxruntime", "onnxruntime", "ab12", {"threads": 2})
    >>> o.config["threads"], o.status
    (2, 'not run')
    """

    backend: str
    kind: str
    key: str
    config: PMap[str, Any]
    profile: Profile | None = None
    failure: BackendFailure | None = None
    stage_seconds: PMap[str, float] = field(default_factory=pmap)
    validation: PMap[str, float] = field(default_factory=pmap)
    artifact: str | None = None
    stopped_early: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.backend, str) or not self.backend:
            raise ValueError(f"a BackendOutcome needs a non-empty backend, got {self.backend!r}")
        if self.profile is not None and self.failure is not None:
            raise ValueError(f"backend {self.backend!r} has both a profile and a failure; keep one")
        object.__setattr__(self, "config", freeze_json(dict(self.config)))
        object.__setattr__(self, "stage_seconds", freeze_numbers(self.stage_seconds))
        object.__setattr__(self, "validation", freeze_numbers(self.validation))

    @property
    def status(self) -> str:
        """``profiled``, ``failed`` or ``not run``."""
        if self.failure is not None:
            return "failed"
        return "profiled" if self.profile is not None else "not run"


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One tuning run, complete enough to report on and to re-select offline.

    >>> r = RunRecord("mlp", "cpu", {"strategy": "max"}, None, (), None, None, {}, {}, None)
    >>> decode(encode(r)) == r
    True
    """

    model: str
    device: str
    strategy: PMap[str, Any]
    baseline: BackendOutcome | None
    candidates: tuple[BackendOutcome, ...]
    selection: Selection | None
    error: TuneError | None
    environment: PMap[str, Any]
    input_spec: PMap[str, Any]
    max_batch_size: int | None
    schema_version: int = SCHEMA_VERSION
    status: str = "complete"
    options: PMap[str, Any] = field(default_factory=pmap)
    verification: Verification | None = None
    provenance: Provenance = field(default_factory=Provenance)
    max_batch_search: MaxBatchSearch | None = None
    wall: WallAccount | None = None
    events: tuple[Event, ...] = ()
    notes: tuple[Note, ...] = ()
    plan: PlanRecord | None = None
    reverification: Verification | None = None
    left_out: tuple[LeftOut, ...] = ()

    def __post_init__(self) -> None:
        if self.status not in ("complete", "interrupted"):
            raise ValueError(f"status must be complete or interrupted, got {self.status!r}")
        for name in ("options", "strategy", "environment", "input_spec"):
            object.__setattr__(self, name, freeze_json(dict(getattr(self, name))))
        object.__setattr__(self, "candidates", tuple(self.candidates))
        names = [c.backend for c in self.candidates]
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            raise ValueError(f"candidate backend names must be unique, repeated: {dup}")
        largest = self.max_batch_size
        if largest is not None and (isinstance(largest, bool) or largest < 1):
            raise ValueError(f"max_batch_size must be >= 1 or None, got {self.max_batch_size!r}")
        if self.schema_version != SCHEMA_VERSION:
            raise ValueError(f"schema_version must be {SCHEMA_VERSION}, got {self.schema_version}")

    @property
    def outcomes(self) -> tuple[BackendOutcome, ...]:
        """The baseline (when there is one) then every candidate, in order."""
        return (self.baseline, *self.candidates) if self.baseline else self.candidates


def _as_candidate(outcome: BackendOutcome) -> Candidate | None:
    if outcome.failure is not None:
        return Failure(outcome.failure)
    return Success(outcome.profile) if outcome.profile is not None else None


def as_candidates(record: RunRecord) -> tuple[Candidate, ...]:
    """The run's candidates as the fold's inputs, in order; backends never run are left out.

    >>> r = RunRecord("m", "cpu", {}, None,
    ...     (BackendOutcome("a", "a", "k", {}, profile=Profile("a", {1: [1.0]})),
    ...      BackendOutcome("b", "b", "k", {}, failure=BackendFailure("b", "build", "x"))),
    ...     None, None, {}, {}, None)
    >>> [c.__class__.__name__ for c in as_candidates(r)]
    ['Success', 'Failure']
    """
    found = (_as_candidate(o) for o in record.candidates)
    return tuple(c for c in found if c is not None)


def baseline_candidate(record: RunRecord) -> Candidate | None:
    """The baseline as the fold's ``baseline`` argument (``None`` when it was not run)."""
    return None if record.baseline is None else _as_candidate(record.baseline)


def reselect(record: RunRecord, strategy: Strategy) -> Result[Selection, TuneError]:
    """Re-run the pure fold on a stored run with ``strategy`` (no model, no device); only
    what was measured can be re-judged (a budget sweep stopped early lacks larger batches).
    """
    return tune(strategy, as_candidates(record), baseline_candidate(record))


def with_strategy(record: RunRecord, strategy: Strategy) -> RunRecord:
    """The record re-selected with ``strategy``: new strategy config, selection and error."""
    outcome = reselect(record, strategy)
    config = strategy_config(strategy, [c.backend for c in record.candidates])
    chosen, error = outcome.value_or(None), outcome.swap().value_or(None)
    kept = replace(record, verification=None, reverification=None)
    return replace(kept, strategy=freeze_json(config), selection=chosen, error=error)


def encode_outcome(outcome: BackendOutcome) -> dict[str, Any]:
    """One backend's outcome as a JSON-able dict (non-finite floats by name; every pinned
    stage written, :mod:`.stages`).

    >>> o = BackendOutcome("a", "a", "k", {}, validation={"max_abs": float("inf")})
    >>> encode_outcome(o)["validation"], decode_outcome(encode_outcome(o)) == o
    ({'max_abs': 'Infinity'}, True)
    """
    return {**to_json(outcome), "stage_seconds": encode_stages(outcome.stage_seconds)}


def decode_outcome(data: Any, where: str = "outcome") -> BackendOutcome:
    """One backend's outcome from :func:`encode_outcome`'s output."""
    return from_json(without_null_stages(data), BackendOutcome, where)


def encode(record: RunRecord) -> dict[str, Any]:
    """The record as a JSON-able dict (the ``run.json`` schema, see docs/run-record.md)."""
    rest = replace(record, baseline=None, candidates=(), events=(), notes=())
    tree: dict[str, Any] = {k: v for k, v in to_json(rest).items() if k != "notes"}
    for name in ("plan", "reverification", "left_out"):  # written only when there
        if not tree[name]:
            del tree[name]
    said = {"notes": encode_notes(record.notes)} if record.notes else {}  # only when any were
    own = {
        "baseline": None if record.baseline is None else encode_outcome(record.baseline),
        "candidates": [encode_outcome(c) for c in record.candidates],
        "wall": encode_wall(record.wall),
        "events": encode_events(record.events),
    }
    return {**tree, **own, **said}


def _version(data: Any) -> int:
    """The record's schema version, when this aitune_fp reads it."""
    if not isinstance(data, dict) or "schema_version" not in data:
        raise ValueError("run record: no schema_version field: not an aitune_fp run record")
    version = data["schema_version"]
    if version not in READS or isinstance(version, bool):
        raise ValueError(
            f"run record: schema_version {version} is not supported "
            f"(this aitune_fp reads {' and '.join(map(str, READS))})"
        )
    return int(version)


def decode(data: Any) -> RunRecord:
    """A :class:`RunRecord` from ``encode``'s output (or a version 1 record, the same
    shape); ``ValueError`` naming the bad path.

    >>> decode({"schema_version": 99})
    Traceback (most recent call last):
    ...
    ValueError: run record: schema_version 99 is not supported (this aitune_fp reads 1 and 2)
    """
    _version(data)
    doc = {**_ABSENT, **data}
    candidates = doc.get("candidates")
    if isinstance(candidates, list):
        doc["candidates"] = [without_null_stages(c) for c in candidates]
    doc["baseline"] = without_null_stages(doc["baseline"])
    own = {
        "schema_version": SCHEMA_VERSION,
        "wall": read_wall(doc, "run record.wall"),
        "events": decode_events(doc.get("events", []), "run record.events"),
        "notes": decode_notes(doc.get("notes"), "run record.notes"),
    }
    return decoded_fields(doc, RunRecord, "run record", own)


def dumps(record: RunRecord) -> str:
    """The record as indented, key-sorted, strict JSON text (no NaN literals).

    >>> o = BackendOutcome("a", "a", "k", {})
    >>> r = RunRecord("m", "cpu", {}, None, (o,), None, None, {}, {}, None)
    >>> loads(dumps(r)) == r, encode(r)["schema_version"]
    (True, 2)
    """
    text = msgspec.json.format(msgspec.json.encode(encode(record), order="sorted"), indent=2)
    return text.decode("utf-8") + "\n"


def loads(text: str) -> RunRecord:
    """A record from JSON text; ``ValueError`` for bad JSON or a bad record.

    >>> loads("[1,")
    Traceback (most recent call last):
    ...
    ValueError: run record: not valid JSON (Input data was truncated)
    """
    try:
        data = msgspec.json.decode(text)
    except msgspec.DecodeError as exc:
        raise ValueError(f"run record: not valid JSON ({exc})") from None
    return decode(data)
