"""The max-batch search's result, cached: a warm tune of the same model reuses its sweep.

Rules:
- the result is stored under :func:`sweep_keys`: the baseline keys that exist before the
  sweep (:func:`~aitune_fp.shell.baseline_reuse.baseline_keys`: the model's code,
  behaviour and weights digest, :func:`aitune_fp.effects.cache.key.model_digest`; the
  input spec; the profiling plan's digest; the environment fingerprint's digest; the
  device; isolation), plus what the sweep alone depends on: a digest of the sample
  values, the sweep's cap and the call timeout (a hang is a call that outlived it);
- one file per key set, ``<cache>/max_batch/<digest of the keys>.json``, written
  atomically (:mod:`aitune_fp.effects.atomic`); it holds its keys, the max batch size,
  the search's stop and reason, and the sha256 of that content: a file whose hash does
  not match, that cannot be parsed, or whose keys differ from this run's in any way is
  never used (a corrupt one is a warning and is removed) and the sweep runs again;
- a reused result says so: its ``reused_from`` is the file it came from, which the run
  record keeps and the max-batch line shows;
- a sweep that stopped on a fault (eager raised, crashed or hung at some batch size) is
  cached too, with its reason and the failed batch size, so a warm tune does not crash or
  hang a worker again to learn the same thing (the keys see the model's code, weights,
  inputs and call timeout; a changed one sweeps again); an eager module that cannot run
  one row is a ``TuneError``, never cached;
- a cache folder that cannot be written means no caching (a warning), never a failure.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

import torch

from aitune_fp.core.record.json_codec import from_json, to_json
from aitune_fp.core.record.max_batch import MaxBatchSearch
from aitune_fp.core.record.provenance import differing
from aitune_fp.core.strategies.registry import plan_config
from aitune_fp.core.strategy import ProfilingPlan
from aitune_fp.effects.atomic import write_text
from aitune_fp.effects.cache.key import model_digest
from aitune_fp.effects.cache.reference import samples_digest
from aitune_fp.effects.inputs.samples import Samples
from aitune_fp.effects.isolation import Timeouts
from aitune_fp.effects.machine.environment import environment_fingerprint

log = logging.getLogger("aitune_fp")
FOLDER: Final = "max_batch"
FORMAT: Final = 1


def _digest(value: object) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def model_keys(
    module: torch.nn.Module,
    spec: object,
    device: torch.device,
    plan: ProfilingPlan,
    isolation: bool,
) -> dict[str, str]:
    """The keys the sweep and the baseline both depend on: the model
    (:func:`~aitune_fp.effects.cache.key.model_digest`), the input spec, the profiling plan
    without its final rounds, the environment, the device and isolation.

    >>> linear, cpu = torch.nn.Linear(2, 2), torch.device("cpu")
    >>> keys = model_keys(linear, "spec", cpu, ProfilingPlan(), isolation=False)
    >>> sorted(keys), keys["device"], keys["isolation"]
    (['device', 'environment', 'inputs', 'isolation', 'model', 'profiling'], 'cpu', 'False')
    >>> unbatched = model_keys(linear, "spec", cpu, ProfilingPlan(batching=False), False)
    >>> unbatched["profiling"] != keys["profiling"], unbatched["model"] == keys["model"]
    (True, True)
    """
    profiling = {k: v for k, v in plan_config(plan).items() if k != "rounds"}
    return {
        "model": model_digest(module),
        "inputs": repr(spec),
        "profiling": _digest(profiling)[:32],
        "environment": _digest(environment_fingerprint(device))[:32],
        "device": str(device),
        "isolation": str(isolation),
    }


def sweep_keys(
    module: torch.nn.Module,
    samples: Samples,
    device: torch.device,
    plan: ProfilingPlan,
    cap: int | None,
    *,
    isolation: bool,
    timeouts: Timeouts,
) -> dict[str, str]:
    """What the max-batch search's result depends on, each as text (see the rules).

    >>> from aitune_fp.effects.inputs.samples import normalise_samples
    >>> samples = normalise_samples([torch.zeros(2, 2)])
    >>> keys = sweep_keys(torch.nn.Linear(2, 2), samples, torch.device("cpu"), ProfilingPlan(),
    ...                   8, isolation=True, timeouts=Timeouts(call=30))
    >>> keys["cap"], keys["call_timeout"], keys["isolation"], len(keys["samples"]) > 0
    ('8', '30', 'True', True)
    """
    return {
        **model_keys(module, samples.spec, device, plan, isolation),
        "samples": samples_digest(samples),
        "cap": str(cap),
        "call_timeout": repr(timeouts.call),
    }


def entry_path(cache_dir: Path, keys: dict[str, str]) -> Path:
    """The cache file for ``keys``: one per key set, named by their digest.

    >>> path = entry_path(Path("cache"), {"model": "m"})
    >>> path.parent.as_posix(), len(path.stem), path.suffix
    ('cache/max_batch', 32, '.json')
    >>> path == entry_path(Path("cache"), {"model": "n"})
    False
    """
    return cache_dir / FOLDER / f"{_digest(keys)[:32]}.json"


def _problem(data: Any, keys: dict[str, str]) -> str | None:
    """Why ``data`` cannot be used for ``keys`` (``None``: it can)."""
    if not isinstance(data, dict) or not isinstance(data.get("body"), dict):
        return "not a cached max-batch result"
    if data.get("sha256") != _digest(data["body"]):
        return "its content does not match its sha256 (modified or truncated)"
    body = data["body"]
    if body.get("format") != FORMAT:
        return f"format {body.get('format')!r} is not {FORMAT}"
    theirs = body.get("keys")
    if not isinstance(theirs, dict) or differing(keys, theirs):
        return "its keys differ"
    return None


def _decoded(data: Any, keys: dict[str, str], path: Path) -> tuple[int, MaxBatchSearch] | str:
    """The usable result in ``data``, or why there is none."""
    problem = _problem(data, keys)
    if problem is not None:
        return problem
    body = data["body"]
    search = from_json(body["search"], MaxBatchSearch, "max_batch_search")
    largest = int(body["max_batch_size"])
    if largest < 1:
        raise ValueError(f"max batch size {largest} < 1")
    return largest, replace(search, reused_from=str(path))


def load(cache_dir: Path, keys: dict[str, str]) -> tuple[int, MaxBatchSearch] | None:
    """The cached max batch size and search for ``keys`` (``None``: none usable; a file
    that cannot be used is removed).

    >>> import tempfile
    >>> cache, keys = Path(tempfile.mkdtemp()), {"model": "m"}
    >>> store(cache, keys, 4, MaxBatchSearch("hung", "eager hung", failed_at=8))
    >>> largest, search = load(cache, keys)
    >>> largest, search.stop, search.failed_at, search.reused_from == str(entry_path(cache, keys))
    (4, 'hung', 8, True)
    >>> load(cache, {"model": "another"}) is None
    True
    >>> _ = entry_path(cache, keys).write_text("{not json")
    >>> load(cache, keys) is None, entry_path(cache, keys).exists()
    (True, False)
    """
    path = entry_path(cache_dir, keys)
    if not path.is_file():
        return None
    try:
        found = _decoded(json.loads(path.read_text(encoding="utf-8")), keys, path)
    except (OSError, ValueError, KeyError, TypeError) as error:
        found = f"unreadable ({error})"
    if not isinstance(found, str):
        return found
    log.warning("ignoring the cached max-batch result %s: %s; sweeping again", path, found)
    with contextlib.suppress(OSError):
        path.unlink(missing_ok=True)
    return None


def store(cache_dir: Path, keys: dict[str, str], largest: int, search: MaxBatchSearch) -> None:
    """Cache this run's sweep under ``keys`` (a write that fails is a warning).

    >>> import tempfile
    >>> blocked = Path(tempfile.mkstemp()[1])  # a file where the cache folder should be
    >>> store(blocked, {"model": "m"}, 2, MaxBatchSearch("cap", "every size ran"))
    >>> load(blocked, {"model": "m"}) is None
    True
    """
    body = {
        "format": FORMAT,
        "keys": keys,
        "max_batch_size": largest,
        "search": to_json(replace(search, reused_from=None)),
    }
    path = entry_path(cache_dir, keys)
    try:
        write_text(path, json.dumps({"body": body, "sha256": _digest(body)}, indent=1))
    except OSError as error:
        log.warning("could not cache the max-batch result in %s: %s", path, error)
