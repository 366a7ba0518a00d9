"""Reuse the eager baseline of an earlier run, when the user asks and nothing it depends on
changed (``--reuse-baseline RUN_JSON``, ``TuneOptions(reuse_baseline=...)``).

Rules:
- every run records its :func:`baseline_keys`: the model's code and weights digest
  (:func:`~aitune_fp.effects.cache.key.model_digest`), the input spec, the batch sizes to
  profile, the profiling plan (call and sweep rules, without the final rounds), the
  profiler settings, a digest of the environment fingerprint, the device and isolation;
- a baseline is reused only when asked, only from a record whose baseline was profiled
  and whose keys all equal this run's; then eager is not profiled: its profile is the
  record's, the record says where it came from (``provenance.baseline_reused_from``), and
  an eager runner is still made here (cheap: it is the module itself) for the final
  rounds, the verification and the fallback to the baseline;
- anything else is never silent: one warning naming what differs (or why the record
  cannot be used), kept in the record (``provenance.baseline_refused``), and the baseline
  is measured as usual.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from pyrsistent import pmap

from aitune_fp.core.record.provenance import Provenance, differing
from aitune_fp.core.record.run_record import BackendOutcome, RunRecord, loads
from aitune_fp.core.records import Profile
from aitune_fp.shell.batch_cache import model_keys
from aitune_fp.shell.setup import Setup

log = logging.getLogger("aitune_fp")
BaselineSource = str | Path | RunRecord


@dataclass(frozen=True, slots=True)
class BaselinePlan:
    """This run's provenance and, when one is reused, the earlier baseline's outcome."""

    provenance: Provenance
    reused: BackendOutcome | None = None

    @property
    def profile(self) -> Profile | None:
        """The reused baseline's profile (``None``: the baseline is profiled)."""
        return self.reused.profile if self.reused is not None else None


def baseline_keys(setup: Setup) -> dict[str, str]:
    """What this run's baseline profile depends on, each as text: the keys the sweep
    depends on too (:func:`~aitune_fp.shell.batch_cache.model_keys`), the batch sizes to
    profile and the profiler settings."""
    keys = model_keys(
        setup.request.module,
        setup.request.samples.spec,
        setup.request.device,
        setup.strategy.plan,
        setup.isolation,
    )
    batch_sizes = ",".join(str(b) for b in setup.request.batch_sizes)
    return {**keys, "batch_sizes": batch_sizes, "settings": repr(setup.request.settings)}


def _read(source: BaselineSource) -> tuple[RunRecord | None, str, str | None]:
    """The record, where it is from, and why it could not be read (``None``: it was)."""
    if isinstance(source, RunRecord):
        return source, "the given run record", None
    path = Path(source)
    try:
        return loads(path.read_text(encoding="utf-8")), str(path.resolve()), None
    except OSError as error:
        return None, str(path), f"cannot read it ({error.strerror or error})"
    except ValueError as error:
        return None, str(path), str(error)


def _refusal(record: RunRecord, keys: dict[str, str]) -> str | None:
    """Why ``record``'s baseline cannot stand for this run's (``None``: it can)."""
    if record.baseline is None or record.baseline.profile is None:
        return "it has no profiled baseline"
    theirs = dict(record.provenance.baseline_keys)
    if not theirs:
        return "it records no baseline keys (written by an older aitune_fp)"
    differs = differing(keys, theirs)
    return f"its {', '.join(differs)} differ{'s' if len(differs) == 1 else ''}" if differs else None


def plan_baseline(setup: Setup, source: BaselineSource | None) -> BaselinePlan:
    """This run's keys and, when ``source`` is given and matches, the baseline to reuse."""
    keys = baseline_keys(setup)
    own = BaselinePlan(Provenance(pmap(keys)))
    if source is None:
        return own
    if not setup.strategy.validate_performance:
        return _refused(keys, f"not reusing a baseline: {setup.strategy.name} profiles none")
    record, where, problem = _read(source)
    if record is not None:
        problem = _refusal(record, keys)
    if record is None or problem is not None:
        return _refused(keys, f"not reusing the baseline of {where}: {problem}; measuring it")
    log.info("eager baseline reused from %s (not profiled again)", where)
    return BaselinePlan(Provenance(pmap(keys), where), record.baseline)


def _refused(keys: dict[str, str], line: str) -> BaselinePlan:
    log.warning("%s", line)
    return BaselinePlan(Provenance(pmap(keys), baseline_refused=line))
