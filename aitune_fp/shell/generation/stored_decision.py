"""A generation tune through the decision cache: an unchanged re-tune re-verifies its pick.

Rules (the tune's own decision cache, :mod:`aitune_fp.shell.decision_cache`, reads and
writes the files; the decision lines and what may stand are the core's,
:mod:`aitune_fp.core.record.decisions`):
- a generation tune's decision is stored under :func:`generation_keys`: the model's digest
  (code and weights), the prompts' ids, the run's shape (new tokens, batch sizes), the
  strategy's config, the candidates, the accuracy and time policy, the environment
  fingerprint and the device;
- without a cache folder, or with ``fresh``, the tune is a full one; else the stored
  decision and the generator saved beside it (``<cache>/generators/<entry>``: a sealed
  save, :mod:`aitune_fp.shell.generation.generator_save`) are read, and when both are there
  the re-check runs (``recheck``: the stored session replayed from its log, only its
  verification timed again, :data:`SHORT_VERIFY` seconds of :data:`RECHECK_TOKENS`-token
  runs); the decision stands when the re-check selects the stored
  pick, and its record is the stored one with the re-check's verification
  (:func:`~aitune_fp.core.record.hit.hit_record`, decision line
  :func:`~aitune_fp.core.record.decisions.cached_line`); otherwise a full tune follows and
  its record says why (:func:`~aitune_fp.core.record.decisions.retuned_line`, a save that
  cannot be loaded, or the keys that changed since the model's last decision,
  :func:`~aitune_fp.core.record.decisions.missed_line`);
- every full tune that selected something is stored: its run record and its generator
  save (a save that cannot be written is a warning; the tune stands).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final

import torch

from aitune_fp.core.record.decisions import FULL, digest, missed_line
from aitune_fp.core.session.program import Stored
from aitune_fp.core.strategies.registry import strategy_config
from aitune_fp.core.strategy import Strategy
from aitune_fp.effects.cache.key import model_digest
from aitune_fp.effects.machine.environment import environment_fingerprint
from aitune_fp.shell.decision_cache import canonical, entry_path, read, store
from aitune_fp.shell.generation.tuned_generator import TunedGenerator

log = logging.getLogger("aitune_fp")
FOLDER: Final = "generators"
SHORT_VERIFY: Final = 0.5
"""The re-check's verification budget (seconds; at least its minimum rounds are run)."""
RECHECK_TOKENS: Final = 4
"""New tokens per run of a re-check's verification (the tune's runs are longer)."""

Recheck = Callable[[Stored, Path], TunedGenerator | str]
"""The re-check of a stored decision from its save: the generator when the decision stands,
else the full tune's decision line (:func:`~aitune_fp.core.record.decisions.retuned_line`,
or why the save could not be loaded)."""


@dataclass(frozen=True, slots=True)
class Asking:
    """What a generation tune is keyed by: the model, the prompts' ids, the new tokens and
    batch sizes, the strategy, the candidates' names, the policy and the device."""

    model: torch.nn.Module
    ids: Sequence[torch.Tensor]
    new_tokens: int
    batch_sizes: tuple[int, ...]
    strategy: Strategy
    names: tuple[str, ...]
    policy: object
    device: torch.device


def generation_keys(asking: Asking) -> dict[str, str]:
    """What a generation tune's decision depends on, each as text (see the module rules)."""
    prompts = hashlib.sha256()
    for ids in asking.ids:
        prompts.update(repr(tuple(ids.shape)).encode())
        prompts.update(ids.detach().cpu().contiguous().numpy().tobytes())
    shape = {"new_tokens": asking.new_tokens, "batch_sizes": list(asking.batch_sizes)}
    return {
        "model": model_digest(asking.model),
        "samples": prompts.hexdigest(),
        "inputs": digest(shape),
        "environment": digest(environment_fingerprint(str(asking.device)))[:32],
        "device": str(asking.device),
        "strategy": digest(strategy_config(asking.strategy)),
        "candidates": digest(list(asking.names)),
        "policy": digest(canonical(asking.policy)),
    }


def save_path(cache_dir: Path, keys: dict[str, str]) -> Path:
    """Where the generator of the decision stored under ``keys`` is saved.

    >>> save_path(Path("c"), {"model": "m"}).parent.as_posix()
    'c/generators'
    """
    return cache_dir / FOLDER / entry_path(cache_dir, keys).stem


def decided(
    asking: Asking,
    cache_dir: Path | None,
    fresh: bool,
    full: Callable[[], TunedGenerator],
    recheck: Recheck,
) -> TunedGenerator:
    """The tuned generator, from the stored decision when it still holds (module rules)."""
    if cache_dir is None or fresh:
        return _said(full(), FULL)
    keys, label = generation_keys(asking), type(asking.model).__name__
    found = read(cache_dir, keys, label, asking.strategy)
    saved = save_path(cache_dir, keys)
    line = missed_line(keys, found.last)
    if found.stored is not None and saved.is_dir():
        again = recheck(found.stored, saved)
        if isinstance(again, TunedGenerator):
            return again
        line = again
    tuned = _said(full(), line)
    if tuned.run is not None:
        store(cache_dir, keys, tuned.run, label)
        _save(tuned, saved)
    return tuned


def _said(tuned: TunedGenerator, line: str) -> TunedGenerator:
    """``tuned`` whose record's decision line is ``line``."""
    if tuned.run is None:
        return tuned
    said = replace(tuned.run.provenance, decision=line)
    return tuned.with_run(replace(tuned.run, provenance=said))


def _save(tuned: TunedGenerator, path: Path) -> None:
    """Save the generator beside its decision (a failure is a warning)."""
    try:
        tuned.save(path)
    except (OSError, ValueError) as error:
        log.warning("could not save the generator in %s: %s", path, error)
