"""The run record's ``verification``: a :class:`Verification` as JSON and back (pure).

Rules: every field is written (the pinned ``holds``, ``winner``, ``challenger``,
``speedup``, ``ci95`` as ``[low, high]`` and ``seconds``, then the rest: the paired
``samples_ms`` by backend (``backend@batch`` for the winner at a neighbouring batch size)
and ``selected_batch_size``, absent from older records, are read as none and as the
batch size the record implies; so are a comparison's ``verdict`` and the verification's
``outcome`` and ``standing``, read as empty); a record
without the key, or with ``null``, has no verification; decoding checks types through the
:class:`~aitune_fp.core.record.reader.Reader` and the record's invariants, naming the path.

>>> v = Verification(False, "aot", "ort", 0.8, (0.78, 0.82), 3.0, 1, 1, 900, "ort")
>>> encode_verification(v)["ci95"], decode_verification(encode_verification(v)) == v
([0.78, 0.82], True)
>>> decode_verification(None) is None
True
>>> decode_verification({"holds": 1}, "run record.verification")
Traceback (most recent call last):
...
ValueError: run record.verification.holds: expected a boolean, got a number
"""

from __future__ import annotations

from typing import Any

from aitune_fp.core.record.reader import Reader
from aitune_fp.core.record.values import encode_float
from aitune_fp.core.verification.judge import Comparison, Verification

__all__ = ["Verification", "decode_verification", "encode_verification", "read_verification"]


def _pair(values: tuple[float, ...], path: str) -> tuple[float, float]:
    if len(values) != 2:
        raise ValueError(f"{path}: expected [low, high], got {len(values)} numbers")
    return values[0], values[1]


def encode_verification(v: Verification | None) -> dict[str, Any] | None:
    """The verification as a JSON-able dict, or ``None``."""
    if v is None:
        return None
    return {
        "holds": v.holds,
        "winner": v.winner,
        "challenger": v.challenger,
        "speedup": v.speedup,
        "ci95": list(v.ci95),
        "seconds": v.seconds,
        "winner_batch_size": v.winner_batch_size,
        "challenger_batch_size": v.challenger_batch_size,
        "rounds": v.rounds,
        "selected": v.selected,
        "metric": v.metric,
        "comparisons": [_encode_comparison(c) for c in v.comparisons],
        "reason": v.reason,
        "samples_ms": {k: [encode_float(x) for x in v.samples_ms[k]] for k in sorted(v.samples_ms)},
        "selected_batch_size": v.selected_batch_size,
        "outcome": v.outcome,
        "standing": [_encode_comparison(c) for c in v.standing],
    }


def _encode_comparison(c: Comparison) -> dict[str, Any]:
    return {
        "challenger": c.challenger,
        "batch_size": c.batch_size,
        "speedup": c.speedup,
        "ci95": list(c.ci95),
        "overturns": c.overturns,
        "verdict": c.verdict,
    }


def _comparison(doc: Reader) -> Comparison:
    return doc.build(
        Comparison,
        doc.text("challenger"),
        doc.integer("batch_size"),
        doc.number("speedup"),
        _pair(doc.numbers("ci95"), doc.at("ci95")),
        doc.flag("overturns"),
        doc.text("verdict", ""),
    )


def decode_verification(data: Any, path: str = "verification") -> Verification | None:
    """A :class:`Verification` from :func:`encode_verification`'s output (``None`` for null)."""
    if data is None:
        return None
    doc = Reader(data, path)
    return doc.build(
        Verification,
        holds=doc.flag("holds"),
        winner=doc.text("winner"),
        challenger=doc.text("challenger"),
        speedup=doc.number("speedup"),
        ci95=_pair(doc.numbers("ci95"), doc.at("ci95")),
        seconds=doc.number("seconds"),
        winner_batch_size=doc.integer("winner_batch_size", 1),
        challenger_batch_size=doc.integer("challenger_batch_size", 1),
        rounds=doc.integer("rounds", 0),
        selected=doc.text("selected", ""),
        metric=doc.text("metric", "latency"),
        comparisons=tuple(_comparison(c) for c in doc.children("comparisons", [])),
        reason=doc.text("reason", ""),
        samples_ms=_samples(doc),
        selected_batch_size=doc.integer("selected_batch_size", 0),
        outcome=doc.text("outcome", ""),
        standing=tuple(_comparison(c) for c in doc.children("standing", [])),
    )


def _samples(doc: Reader) -> dict[str, tuple[float, ...]]:
    """The paired samples by backend (``{}`` when the record has none)."""
    found = doc.obj("samples_ms", {})
    return {k: Reader(found, doc.at("samples_ms")).numbers(k) for k in found}


def read_verification(record: Reader) -> Verification | None:
    """The ``verification`` field of a run record under decoding (absent reads as ``None``)."""
    return decode_verification(record.raw("verification", None), record.at("verification"))
