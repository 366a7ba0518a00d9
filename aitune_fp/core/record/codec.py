"""The core records as JSON-able dicts and back (pure; used by the run record).

Rules:
- every field of every record is written, so decoding gives an equal record (raw samples
  included, even those ``==`` ignores);
- an optional number (``peak_memory_mb``) is written as a number or ``null``, and an
  absent key (a record written before the field existed) reads as ``None``;
- a ``Profile``'s batch sizes are JSON object keys, written as decimal strings in ascending
  order;
- decoding checks types through :class:`~aitune_fp.core.record.reader.Reader` and the records'
  own invariants, and raises ``ValueError`` naming the path of the bad value.
"""

from __future__ import annotations

from typing import Any

from aitune_fp.core.record.reader import Reader
from aitune_fp.core.record.values import encode_float
from aitune_fp.core.records import (
    BackendFailure,
    BackendPerfResult,
    BackendProfilingResult,
    MeasuredBatch,
    Profile,
    Scored,
    Selection,
    TuneError,
)


def encode_profile(profile: Profile) -> dict[str, Any]:
    """A profile as a dict; latencies keyed by the batch size as a string.

    >>> encode_profile(Profile("eager", {2: [1.5]}))["latencies_ms"]
    {'2': [1.5]}
    """
    return {
        "backend": profile.backend,
        "latencies_ms": {str(bs): list(profile.samples(bs)) for bs in profile.batch_sizes},
        "sweep_stop": profile.sweep_stop,
        "input_mode": profile.input_mode,
        "rounds_ms": {str(bs): list(profile.rounds_ms[bs]) for bs in sorted(profile.rounds_ms)},
        "peak_memory_mb": _optional_float(profile.peak_memory_mb),
        "batches": {str(bs): encode_batch(profile.batches[bs]) for bs in sorted(profile.batches)},
        "stopped_early": profile.stopped_early,
        "accuracy": {k: encode_float(v) for k, v in sorted(profile.accuracy.items())},
    }


def encode_batch(batch: MeasuredBatch) -> dict[str, Any]:
    """How one batch size was measured: warm-up calls, reason and samples, first pass."""
    first = batch.first_pass_ms
    return {
        "warmup_calls": batch.warmup_calls,
        "warmup_reason": batch.warmup_reason,
        "warmup_ms": [encode_float(v) for v in batch.warmup_ms],
        "first_pass_ms": None if first is None else [encode_float(v) for v in first],
    }


def decode_batch(doc: Reader) -> MeasuredBatch:
    """One batch size's :class:`MeasuredBatch` from :func:`encode_batch`'s output."""
    first = None if doc.raw("first_pass_ms", None) is None else doc.numbers("first_pass_ms")
    return doc.build(
        MeasuredBatch,
        doc.integer("warmup_calls"),
        doc.text("warmup_reason"),
        doc.numbers("warmup_ms", []),
        first,
    )


def _optional_float(value: float | None) -> float | str | None:
    """``None`` stays ``None``; a number is written as :func:`encode_float` writes it."""
    return None if value is None else encode_float(value)


def _batch_size(key: str, path: str) -> int:
    """A batch-size key: a decimal integer string."""
    if not key.isdigit():
        raise ValueError(f"{path}: batch size keys must be decimal integers, got {key!r}")
    return int(key)


def _per_batch_size(doc: Reader) -> dict[int, tuple[float, ...]]:
    """A ``{"<batch size>": [ms, …]}`` object."""
    return {_batch_size(k, doc.path): doc.numbers(k) for k in doc.data}


def decode_profile(doc: Reader) -> Profile:
    """A profile from :func:`encode_profile`'s output.

    >>> p = Profile("eager", {1: [2.0], 4: [3.0, 3.5]}, peak_memory_mb=12.0)
    >>> decode_profile(Reader(encode_profile(p), "profile")) == p
    True
    >>> decode_profile(Reader({"backend": "x", "latencies_ms": {"1": ["a"]}}, "profile"))
    Traceback (most recent call last):
    ...
    ValueError: profile.latencies_ms.1[0]: expected a number, got a string
    """
    rounds = doc.child_or_none("rounds_ms")
    batches = doc.child_or_none("batches")
    return doc.build(
        Profile,
        doc.text("backend"),
        _per_batch_size(doc.child("latencies_ms")),
        sweep_stop=doc.text("sweep_stop", "plan exhausted"),
        input_mode=doc.text("input_mode", "rotating"),
        rounds_ms={} if rounds is None else _per_batch_size(rounds),
        peak_memory_mb=doc.number_or_none("peak_memory_mb"),
        batches={} if batches is None else _batches(batches),
        stopped_early=doc.text_or_none("stopped_early"),
        accuracy=doc.number_map("accuracy", {}),
    )


def _batches(doc: Reader) -> dict[int, MeasuredBatch]:
    """A ``{"<batch size>": {...}}`` object of :func:`encode_batch` outputs."""
    return {_batch_size(k, doc.path): decode_batch(doc.child(k)) for k in doc.data}


def encode_failure(failure: BackendFailure) -> dict[str, Any]:
    """A failure as ``{"backend", "stage", "message"}``.

    >>> encode_failure(BackendFailure("ort", "build", "no provider"))["stage"]
    'build'
    """
    return {"backend": failure.backend, "stage": failure.stage, "message": failure.message}


def decode_failure(doc: Reader) -> BackendFailure:
    """A failure from :func:`encode_failure`'s output.

    >>> f = BackendFailure("ort", "build", "no provider")
    >>> decode_failure(Reader(encode_failure(f), "failure")) == f
    True
    """
    return doc.build(BackendFailure, doc.text("backend"), doc.text("stage"), doc.text("message"))


def encode_result(result: BackendProfilingResult) -> dict[str, Any]:
    """A profiling result, its raw samples at the selected batch size included.

    >>> encode_result(BackendProfilingResult(2.0, 1, 0.5, 2.0, samples_ms=(0.5,)))["samples_ms"]
    [0.5]
    """
    return {
        "metric": encode_float(result.metric),
        "selected_batch_size": result.selected_batch_size,
        "latency": encode_float(result.latency),
        "throughput": encode_float(result.throughput),
        "samples_ms": [encode_float(s) for s in result.samples_ms],
        "rounds_ms": [encode_float(s) for s in result.rounds_ms],
        "peak_memory_mb": _optional_float(result.peak_memory_mb),
    }


def decode_result(doc: Reader) -> BackendProfilingResult:
    """A profiling result from :func:`encode_result`'s output (non-finite names read back).

    >>> r = BackendProfilingResult(2.0, 1, 0.5, 2.0, rounds_ms=(0.5, 0.6))
    >>> decode_result(Reader(encode_result(r), "result")).rounds_ms
    (0.5, 0.6)
    """
    return doc.build(
        BackendProfilingResult,
        metric=doc.number("metric"),
        selected_batch_size=doc.integer("selected_batch_size"),
        latency=doc.number("latency"),
        throughput=doc.number("throughput"),
        samples_ms=doc.numbers("samples_ms", []),
        rounds_ms=doc.numbers("rounds_ms", []),
        peak_memory_mb=doc.number_or_none("peak_memory_mb"),
    )


def encode_perf(perf: BackendPerfResult) -> dict[str, Any]:
    """A candidate-vs-baseline record as a dict.

    >>> encode_perf(BackendPerfResult("a", 2.0, 1.0, 2.0, True))["speedup"]
    2.0
    """
    return {
        "backend_description": perf.backend_description,
        "metric": encode_float(perf.metric),
        "baseline_metric": encode_float(perf.baseline_metric),
        "speedup": encode_float(perf.speedup),
        "passed": perf.passed,
    }


def decode_perf(doc: Reader) -> BackendPerfResult:
    """A candidate-vs-baseline record from :func:`encode_perf`'s output.

    >>> p = BackendPerfResult("a", 2.0, 1.0, 2.0, True)
    >>> decode_perf(Reader(encode_perf(p), "perf")) == p
    True
    """
    return doc.build(
        BackendPerfResult,
        doc.text("backend_description"),
        doc.number("metric"),
        doc.number("baseline_metric"),
        doc.number("speedup"),
        doc.flag("passed"),
    )


def _encode_scored(scored: Scored) -> dict[str, Any]:
    return {"backend": scored.backend, "result": encode_result(scored.result)}


def _decode_scored(doc: Reader) -> Scored:
    return Scored(doc.text("backend"), decode_result(doc.child("result")))


def encode_selection(selection: Selection) -> dict[str, Any]:
    """A selection as a dict: winner, baseline, ranking, per-backend results, notes.

    >>> r = BackendProfilingResult(2.0, 1, 0.5, 2.0)
    >>> doc = encode_selection(Selection("a", r, False, ranking=(Scored("a", r),)))
    >>> doc["ranking"][0]["backend"], doc["fell_back_to_baseline"]
    ('a', False)
    """
    return {
        "backend": selection.backend,
        "result": encode_result(selection.result),
        "fell_back_to_baseline": selection.fell_back_to_baseline,
        "baseline": None if selection.baseline is None else _encode_scored(selection.baseline),
        "ranking": [_encode_scored(s) for s in selection.ranking],
        "perf_results": [encode_perf(p) for p in selection.perf_results],
        "failures": [encode_failure(f) for f in selection.failures],
        "considered": list(selection.considered),
        "notes": list(selection.notes),
    }


def decode_selection(doc: Reader) -> Selection:
    """A selection from :func:`encode_selection`'s output.

    >>> r = BackendProfilingResult(2.0, 1, 0.5, 2.0)
    >>> s = Selection("a", r, True, baseline=Scored("eager", r), notes=("n",))
    >>> decode_selection(Reader(encode_selection(s), "selection")) == s
    True
    """
    baseline = doc.child_or_none("baseline")
    return doc.build(
        Selection,
        backend=doc.text("backend"),
        result=decode_result(doc.child("result")),
        fell_back_to_baseline=doc.flag("fell_back_to_baseline"),
        perf_results=tuple(decode_perf(p) for p in doc.children("perf_results", [])),
        failures=tuple(decode_failure(f) for f in doc.children("failures", [])),
        baseline=None if baseline is None else _decode_scored(baseline),
        ranking=tuple(_decode_scored(s) for s in doc.children("ranking", [])),
        considered=doc.texts("considered", []),
        notes=doc.texts("notes", []),
    )


def encode_tune_error(error: TuneError) -> dict[str, Any]:
    """A tuning error as a dict.

    >>> encode_tune_error(TuneError("no correct backend found", considered=("a",)))
    {'message': 'no correct backend found', 'failures': [], 'considered': ['a']}
    """
    return {
        "message": error.message,
        "failures": [encode_failure(f) for f in error.failures],
        "considered": list(error.considered),
    }


def decode_tune_error(doc: Reader) -> TuneError:
    """A tuning error from :func:`encode_tune_error`'s output.

    >>> e = TuneError("m", (BackendFailure("a", "build", "x"),), ("a",))
    >>> decode_tune_error(Reader(encode_tune_error(e), "error")) == e
    True
    """
    return doc.build(
        TuneError,
        doc.text("message"),
        tuple(decode_failure(f) for f in doc.children("failures", [])),
        doc.texts("considered", []),
    )
