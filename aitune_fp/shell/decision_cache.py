"""The decision cache: an unchanged re-tune loads the recorded decision and re-verifies it.

Rules:
- a tune's decision is stored under :func:`decision_keys`: the keys a baseline depends
  on (:func:`~aitune_fp.shell.baseline_reuse.baseline_keys`: model digest, input spec,
  batch sizes, profiling plan, profiler settings, environment fingerprint, device,
  isolation), plus the sample values' digest, the strategy with its candidates' configs
  (:func:`~aitune_fp.core.strategies.registry.strategy_config`) and the accuracy policy;
- one file per key set, ``<cache>/decisions/<digest of the keys>.json``, written
  atomically after a complete tune that selected something; it holds its keys, the run
  record and the sha256 of both: a file whose hash does not match, that cannot be parsed
  or whose keys differ in any way is never used (a damaged one is a warning, removed);
- on a hit (:func:`lookup`) the tune re-measures only the recorded pick and its runner-up
  (:func:`runner_up`: among the candidates whose artifacts the cache holds, the one the
  verification found closest, else the next best by the strategy), only at the batch
  size the run selected the pick at (:func:`recorded_sizes`: no race, no sweep of the
  ladder), from their cached artifacts, the pick kept unless the verification's paired
  rounds show the runner-up faster beyond the margin
  (:func:`~aitune_fp.core.strategies.incumbent.incumbent`); when that short run selects
  the recorded pick the decision stands, else the model is re-tuned in full;
- every stored decision also leaves the keys it was stored under for the tune's label
  (``<cache>/decisions/last/<digest of the label>.json``); a later miss for that label names
  the keys that changed since (:func:`missed_line`: model digest, samples, environment,
  device, strategy, accuracy policy, candidates, ...), in the record and one log line;
- the record says which it was (``provenance.decision``: :func:`cached_line`,
  :func:`retuned_line`, :func:`missed_line` or ``"full tune"``: no decision was stored
  for the label yet, or ``--fresh``); ``fresh=True`` (``--fresh``) skips the lookup.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

from pyrsistent import PVector

from aitune_fp.core.record.provenance import CACHE_HIT, differing
from aitune_fp.core.record.run_record import BackendOutcome, RunRecord, dumps, loads, reselect
from aitune_fp.core.strategies.registry import strategy_config
from aitune_fp.core.strategy import Strategy
from aitune_fp.effects.atomic import write_text
from aitune_fp.effects.cache.reference import samples_digest
from aitune_fp.shell.baseline_reuse import baseline_keys
from aitune_fp.shell.setup import Setup

log = logging.getLogger("aitune_fp")
FOLDER: Final = "decisions"
FORMAT: Final = 1
FULL: Final = "full tune"


@dataclass(frozen=True, slots=True)
class Hit:
    """A stored decision that matches this run: its file, record, pick and runner-up."""

    path: Path
    record: RunRecord
    pick: str
    runner_up: str | None


def _digest(value: object) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def decision_keys(setup: Setup, names: Sequence[str]) -> dict[str, str]:
    """What this run's decision depends on, each as text (see the rules)."""
    return {
        **baseline_keys(setup),
        "samples": samples_digest(setup.samples),
        "strategy": _digest(strategy_config(setup.strategy)),
        "candidates": _digest(list(names)),
        "policy": policy_key(setup.tolerance),
    }


def canonical(value: object) -> object:
    """``value`` as plain JSON data whose text never depends on the process: dataclasses
    by their fields (and type name), mappings and sets sorted, anything else by ``repr``
    (a ``pmap``'s own ``repr`` follows its keys' hashes, which differ between processes).

    >>> from pyrsistent import pmap
    >>> canonical(pmap({"b": 1, "a": (2.0, None)}))
    {'a': [2.0, None], 'b': 1}
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: canonical(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return {"type": type(value).__name__, **fields}
    if isinstance(value, Mapping):
        return {str(k): canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, AbstractSet):
        return sorted((canonical(v) for v in value), key=repr)
    if isinstance(value, list | tuple | PVector):
        return [canonical(v) for v in value]
    return value if isinstance(value, str | int | float | bool | None) else repr(value)


def policy_key(tolerance: object) -> str:
    """The accuracy policy's key: the digest of its :func:`canonical` form."""
    return _digest(canonical(tolerance))


def entry_path(cache_dir: Path, keys: dict[str, str]) -> Path:
    """The decision file for ``keys``.

    >>> path = entry_path(Path("cache"), {"model": "m"})
    >>> path.parent.as_posix(), len(path.stem)
    ('cache/decisions', 32)
    """
    return cache_dir / FOLDER / f"{_digest(keys)[:32]}.json"


def loaded(outcome: BackendOutcome) -> bool:
    """Whether ``outcome``'s build went through the artifact cache (a ``cache`` stage was
    recorded): a hit loads its artifact back instead of compiling it again, as a
    just-in-time backend (Inductor) would on every hit (seconds here)."""
    return outcome.profile is not None and outcome.stage_seconds.get("cache") is not None


def runner_up(record: RunRecord, strategy: Strategy) -> str | None:
    """The recorded pick's runner-up: among the other profiled candidates whose artifact
    the cache holds (:func:`loaded`; all of them when none does), the one the recorded
    verification found closest (the smallest speedup of the pick over it), else what
    ``strategy`` selects from them without performance validation (``None``: there is
    none); never the baseline, which is no candidate of the re-verification."""
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


def recorded_sizes(hit: Hit) -> tuple[int, ...]:
    """The batch size the stored run selected its pick at: the only one a re-verification
    profiles, the runner-up included (the decision is the pick at that size; a raced
    runner-up's own recorded size is often only where the race dropped it, and one size
    keeps the pick's other sizes out of the verification)."""
    record = hit.record
    return () if record.selection is None else (record.selection.result.selected_batch_size,)


def _usable(data: Any, keys: dict[str, str]) -> RunRecord | str:
    """The stored record in ``data`` when it may stand for ``keys``, else why not."""
    if not isinstance(data, dict) or not isinstance(data.get("body"), dict):
        return "not a stored decision"
    body = data["body"]
    if data.get("sha256") != _digest(body):
        return "its content does not match its sha256 (modified or truncated)"
    if body.get("format") != FORMAT:
        return f"format {body.get('format')!r} is not {FORMAT}"
    theirs = body.get("keys")
    if not isinstance(theirs, dict) or differing(keys, theirs):
        return "its keys differ"
    try:
        record = loads(str(body.get("record")))
    except ValueError as error:
        return f"its record cannot be read ({error})"
    return record if record.selection is not None else "it holds no selection"


def lookup(cache_dir: Path, keys: dict[str, str], strategy: Strategy) -> Hit | None:
    """The stored decision for ``keys`` (``None``: none, or a damaged one, removed)."""
    path = entry_path(cache_dir, keys)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        data = str(error)
    found = _usable(data, keys)
    if isinstance(found, RunRecord) and found.selection is not None:
        return Hit(path, found, found.selection.backend, runner_up(found, strategy))
    if found != "its keys differ":
        log.warning("ignoring the stored decision %s: %s; tuning in full", path, found)
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)
    return None


def last_path(cache_dir: Path, label: str) -> Path:
    """Where the keys of ``label``'s last stored decision are kept.

    >>> last_path(Path("cache"), "mlp").parent.as_posix()
    'cache/decisions/last'
    """
    return cache_dir / FOLDER / "last" / f"{_digest(label)[:32]}.json"


def store(cache_dir: Path, keys: dict[str, str], record: RunRecord, label: str = "") -> None:
    """Keep ``record``'s decision under ``keys``, and ``keys`` as ``label``'s last (a
    write that fails is a warning)."""
    if record.selection is None or record.status != "complete":
        return
    body = {"format": FORMAT, "keys": keys, "record": dumps(record)}
    path = entry_path(cache_dir, keys)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text(path, json.dumps({"body": body, "sha256": _digest(body)}))
        last_path(cache_dir, label).parent.mkdir(exist_ok=True)
        write_text(last_path(cache_dir, label), json.dumps({"keys": keys}))
    except OSError as error:
        log.warning("could not store the decision in %s: %s", path, error)


CAUSES: Final = {
    "model": "model digest", "samples": "samples", "inputs": "input spec",
    "environment": "environment", "device": "device", "strategy": "strategy",
    "policy": "accuracy policy", "candidates": "candidates", "batch_sizes": "batch sizes",
    "profiling": "profiling plan", "settings": "profiler settings", "isolation": "isolation",
}  # fmt: skip
"""Each decision key as a miss names it."""


def changed_line(changed: Sequence[str]) -> str:
    """The record's ``decision`` when the keys ``changed`` since the label's last decision.

    >>> changed_line(("model", "samples"))
    'full tune: changed since the stored decision: model digest, samples'
    """
    return f"{FULL}: changed since the stored decision: " + ", ".join(
        CAUSES.get(k, k) for k in changed
    )


def missed_line(cache_dir: Path, label: str, keys: dict[str, str]) -> str:
    """Why ``label``'s tune found no stored decision: the keys that changed since its last
    one (:func:`changed_line`), else ``"full tune"`` (none was stored, or it is gone)."""
    try:
        theirs = json.loads(last_path(cache_dir, label).read_text(encoding="utf-8"))["keys"]
    except (OSError, ValueError, KeyError, TypeError):
        return FULL
    changed = differing(keys, theirs) if isinstance(theirs, dict) else ()
    return changed_line(changed) if changed else FULL


def cached_line(hit: Hit) -> str:
    """The record's ``decision`` when the stored decision stood.

    >>> from aitune_fp.core.record.run_record import RunRecord
    >>> r = RunRecord("m", "cpu", {}, None, (), None, None, {}, {}, None)
    >>> cached_line(Hit(Path("d/x.json"), r, "ort", "eager"))
    'decision cache hit (d/x.json): ort re-verified against eager'
    """
    against = f"against {hit.runner_up}" if hit.runner_up else "against the baseline"
    return f"{CACHE_HIT} ({hit.path.as_posix()}): {hit.pick} re-verified {against}"


def retuned_line(hit: Hit, picked: str) -> str:
    """The record's ``decision`` when the re-verification disagreed.

    >>> from aitune_fp.core.record.run_record import RunRecord
    >>> r = RunRecord("m", "cpu", {}, None, (), None, None, {}, {}, None)
    >>> retuned_line(Hit(Path("x.json"), r, "ort", "eager"), "eager")
    'full tune: the re-verification of the stored decision picked eager, not ort'
    """
    return (f"full tune: the re-verification of the stored decision picked {picked or 'nothing'},"
            f" not {hit.pick}")  # fmt: skip
