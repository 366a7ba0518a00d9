"""The decision cache's files: an unchanged re-tune reads the stored decision here, and
every full tune that selected something is written here. The rules of what may stand, the
runner-up, the sizes and the decision lines are the core's
(:mod:`aitune_fp.core.record.decisions`), and what to run is the core's decider
(:mod:`aitune_fp.core.session.program`); this module only reads and writes.

Rules:
- a tune's decision is stored under :func:`decision_keys`: the keys a baseline depends
  on (:func:`~aitune_fp.shell.baseline_reuse.baseline_keys`: model digest, input spec,
  batch sizes, profiling plan, profiler settings, environment fingerprint, device,
  isolation), plus the sample values' digest, the strategy with its candidates' configs
  (:func:`~aitune_fp.core.strategies.registry.strategy_config`) and the accuracy policy;
- one file per key set, ``<cache>/decisions/<digest of the keys>.json``, written
  atomically after a complete tune that selected something (:func:`store`); a file that
  cannot stand (:func:`~aitune_fp.core.record.decisions.usable`) is never used, and a
  damaged one is a warning and removed;
- every stored decision also leaves the keys it was stored under for the tune's label
  (``<cache>/decisions/last/<digest of the label>.json``), which :func:`read` returns
  beside the stored decision so that a miss can name the keys that changed;
- :func:`read` is the one read of a tune (the decision and the label's last keys) and
  :func:`store` the one write.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from pyrsistent import PVector

from aitune_fp.core.record.decisions import KEYS_DIFFER, digest, runner_up, sealed, usable
from aitune_fp.core.record.run_record import RunRecord, dumps
from aitune_fp.core.session.program import Stored
from aitune_fp.core.strategies.registry import strategy_config
from aitune_fp.core.strategy import Strategy
from aitune_fp.effects.atomic import write_text
from aitune_fp.effects.cache.reference import samples_digest
from aitune_fp.shell.baseline_reuse import baseline_keys
from aitune_fp.shell.setup import Setup

log = logging.getLogger("aitune_fp")
FOLDER: Final = "decisions"


@dataclass(frozen=True, slots=True)
class Found:
    """What :func:`read` found: the stored decision that may stand (``None``: none) and
    the label's last stored keys as read (``None``: none or unreadable)."""

    stored: Stored | None
    last: object


def decision_keys(setup: Setup, names: Sequence[str]) -> dict[str, str]:
    """What this run's decision depends on, each as text (see the rules)."""
    return {
        **baseline_keys(setup),
        "samples": samples_digest(setup.request.samples),
        "strategy": digest(strategy_config(setup.strategy)),
        "candidates": digest(list(names)),
        "policy": policy_key(setup.request.tolerance),
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
    return digest(canonical(tolerance))


def entry_path(cache_dir: Path, keys: dict[str, str]) -> Path:
    """The decision file for ``keys``.

    >>> path = entry_path(Path("cache"), {"model": "m"})
    >>> path.parent.as_posix(), len(path.stem)
    ('cache/decisions', 32)
    """
    return cache_dir / FOLDER / f"{digest(keys)[:32]}.json"


def read(cache_dir: Path, keys: dict[str, str], label: str, strategy: Strategy) -> Found:
    """The tune's one read: the stored decision for ``keys`` that may stand (a damaged one
    is a warning and removed) and ``label``'s last stored keys."""
    return Found(_stored(cache_dir, keys, strategy), _last_keys(cache_dir, label))


def _stored(cache_dir: Path, keys: dict[str, str], strategy: Strategy) -> Stored | None:
    path = entry_path(cache_dir, keys)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        data = str(error)
    found = usable(data, keys)
    if isinstance(found, RunRecord) and found.selection is not None:
        return Stored(path.as_posix(), found, found.selection.backend, runner_up(found, strategy))
    if found != KEYS_DIFFER:
        log.warning("ignoring the stored decision %s: %s; tuning in full", path, found)
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)
    return None


def _last_keys(cache_dir: Path, label: str) -> object:
    try:
        return json.loads(last_path(cache_dir, label).read_text(encoding="utf-8"))["keys"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def last_path(cache_dir: Path, label: str) -> Path:
    """Where the keys of ``label``'s last stored decision are kept.

    >>> last_path(Path("cache"), "mlp").parent.as_posix()
    'cache/decisions/last'
    """
    return cache_dir / FOLDER / "last" / f"{digest(label)[:32]}.json"


def store(cache_dir: Path, keys: dict[str, str], record: RunRecord, label: str = "") -> None:
    """Keep ``record``'s decision under ``keys``, and ``keys`` as ``label``'s last (a
    write that fails is a warning)."""
    if record.selection is None or record.status != "complete":
        return
    path = entry_path(cache_dir, keys)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text(path, json.dumps(sealed(keys, dumps(record))))
        last_path(cache_dir, label).parent.mkdir(exist_ok=True)
        write_text(last_path(cache_dir, label), json.dumps({"keys": keys}))
    except OSError as error:
        log.warning("could not store the decision in %s: %s", path, error)
