"""The decision cache's pure rules: which stored record may stand for this run's keys,
the pick's runner-up, the sizes a re-check measures, and the record's decision lines.

Rules (the file I/O is :mod:`aitune_fp.shell.decision_cache`'s):
- a stored decision is ``{"body": {"format", "keys", "record"}, "sha256"}``; it may stand
  only when its sha256 is the digest of its body, its format is :data:`FORMAT`, its keys
  equal this run's exactly and its record reads and selected something (:func:`usable`,
  which otherwise says why not);
- the runner-up (:func:`runner_up`) is, among the other profiled candidates whose artifact
  the cache holds (all of them when none does), the one the recorded verification found
  closest, else the next best by the strategy; never the baseline;
- a re-check measures only the batch size the stored run selected its pick at
  (:func:`recorded_sizes`);
- the decision line says which it was: :func:`cached_line`, :func:`retuned_line`,
  :func:`changed_line` or :data:`FULL`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

from aitune_fp.core.record.provenance import CACHE_HIT, differing
from aitune_fp.core.record.run_record import BackendOutcome, RunRecord, loads, reselect
from aitune_fp.core.strategy import Strategy

FORMAT: Final = 1
FULL: Final = "full tune"
KEYS_DIFFER: Final = "its keys differ"
CAUSES: Final = {
    "model": "model digest", "samples": "samples", "inputs": "input spec",
    "environment": "environment", "device": "device", "strategy": "strategy",
    "policy": "accuracy policy", "candidates": "candidates", "batch_sizes": "batch sizes",
    "profiling": "profiling plan", "settings": "profiler settings", "isolation": "isolation",
}  # fmt: skip
"""Each decision key as a miss names it (a table)."""


def digest(value: object) -> str:
    """The sha256 of ``value``'s JSON text with sorted keys.

    >>> digest({"b": 1, "a": 2}) == digest({"a": 2, "b": 1})
    True
    """
    text = json.dumps(value, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def sealed(keys: Mapping[str, str], record_text: str) -> dict[str, Any]:
    """The stored form of a decision: its body and the body's sha256.

    >>> usable(sealed({"m": "1"}, "not json"), {"m": "1"})[:26]
    'its record cannot be read '
    """
    body = {"format": FORMAT, "keys": dict(keys), "record": record_text}
    return {"body": body, "sha256": digest(body)}


def usable(data: Any, keys: Mapping[str, str]) -> RunRecord | str:
    """The stored record in ``data`` when it may stand for ``keys``, else why not.

    >>> usable({"body": {}, "sha256": "0"}, {})
    'its content does not match its sha256 (modified or truncated)'
    >>> usable(sealed({"m": "1"}, ""), {"m": "2"})
    'its keys differ'
    """
    if not isinstance(data, dict) or not isinstance(data.get("body"), dict):
        return "not a stored decision"
    body = data["body"]
    if data.get("sha256") != digest(body):
        return "its content does not match its sha256 (modified or truncated)"
    if body.get("format") != FORMAT:
        return f"format {body.get('format')!r} is not {FORMAT}"
    theirs = body.get("keys")
    if not isinstance(theirs, dict) or differing(keys, theirs):
        return KEYS_DIFFER
    try:
        record = loads(str(body.get("record")))
    except ValueError as error:
        return f"its record cannot be read ({error})"
    return record if record.selection is not None else "it holds no selection"


def loaded(outcome: BackendOutcome) -> bool:
    """Whether ``outcome``'s build went through the artifact cache (a ``cache`` stage was
    recorded): a hit loads its artifact back instead of compiling it again."""
    return outcome.profile is not None and outcome.stage_seconds.get("cache") is not None


def runner_up(record: RunRecord, strategy: Strategy) -> str | None:
    """The recorded pick's runner-up (module rules); ``None`` when there is none."""
    if record.selection is None:
        return None
    pick = record.selection.backend
    rivals = [o for o in record.candidates if o.backend != pick and o.profile is not None]
    pool = {o.backend for o in rivals if loaded(o)} or {o.backend for o in rivals}
    found = record.verification.comparisons if record.verification is not None else ()
    close = sorted((c.speedup, c.challenger) for c in found if c.challenger in pool)
    if close:
        return close[0][1]
    rest = replace(record, candidates=tuple(o for o in rivals if o.backend in pool))
    alone = replace(strategy, validate_performance=False)  # the best other, baseline or not
    return reselect(rest, alone).map(lambda s: s.backend).value_or(None)


def recorded_sizes(record: RunRecord) -> tuple[int, ...]:
    """The batch size the stored run selected its pick at: the only one a re-check
    profiles, the runner-up included."""
    return () if record.selection is None else (record.selection.result.selected_batch_size,)


def changed_line(changed: Sequence[str]) -> str:
    """The decision line when the keys ``changed`` since the label's last decision.

    >>> changed_line(("model", "samples"))
    'full tune: changed since the stored decision: model digest, samples'
    """
    return f"{FULL}: changed since the stored decision: " + ", ".join(
        CAUSES.get(k, k) for k in changed
    )


def missed_line(keys: Mapping[str, str], last: Any) -> str:
    """Why a tune found no stored decision, given the label's last stored keys ``last``
    (anything unreadable: none): the keys that changed, else :data:`FULL`.

    >>> missed_line({"model": "a"}, {"model": "b"})
    'full tune: changed since the stored decision: model digest'
    >>> missed_line({"model": "a"}, None)
    'full tune'
    """
    changed = differing(keys, last) if isinstance(last, dict) else ()
    return changed_line(changed) if changed else FULL


def cached_line(where: str, pick: str, runner: str | None) -> str:
    """The decision line when the stored decision stood.

    >>> cached_line("d/x.json", "ort", "eager")
    'decision cache hit (d/x.json): ort re-verified against eager'
    """
    against = f"against {runner}" if runner else "against the baseline"
    return f"{CACHE_HIT} ({where}): {pick} re-verified {against}"


def retuned_line(pick: str, picked: str) -> str:
    """The decision line when the re-check disagreed.

    >>> retuned_line("ort", "eager")
    'full tune: the re-verification of the stored decision picked eager, not ort'
    """
    return (
        f"{FULL}: the re-verification of the stored decision picked {picked or 'nothing'},"
        f" not {pick}"
    )
