"""One tune from a fixed setup, through the decision cache (:mod:`.decision_cache`).

Rules:
- without a usable cache folder, with ``fresh``, with a baseline to reuse (the caller
  chose what to measure against) or without a stored decision for this run's keys, the
  tune is a full one (``provenance.decision == "full tune"``);
- on a hit, only the recorded pick and its runner-up are candidates, the pick first,
  profiled only at the batch size the stored run selected the pick at (no final rounds: the
  re-verification decides) under :func:`~aitune_fp.core.strategies.incumbent.incumbent`
  (the short profile never re-ranks them: only the verification's paired rounds move the
  pick, on a loss beyond the margin), with no baseline (the stored run checked the pick against
  it, under the same keys: a noisy short run must not fall back to it) unless there is
  no runner-up to re-verify against (then the recorded baseline, not profiled again), and
  the verification's budget is short (:data:`SHORT_VERIFY` seconds, or the caller's when
  that is shorter); the run stands when it selects the recorded pick (its record is then
  the stored run's whole, with the short run's re-verification beside the stored one:
  :func:`~aitune_fp.core.record.hit.hit_record`), else its tuned
  module is closed and a full tune follows, whose record says so; the short run's stages
  are one ``decision_cache_hit`` stage of the wall account
  (:meth:`~aitune_fp.shell.wall_clock.Stopwatch.fold`), the full tune's follow it;
- a miss for a tune whose label (the model's name) had a stored decision says which keys
  changed since, in the record and one log line (:func:`~.decision_cache.missed_line`);
- every full tune that selected something is stored for the next one;
- the session races its candidates over the setup's batch sizes
  (:mod:`aitune_fp.core.session.race_sweep`) unless ``AITUNE_FP_RACE=0``.
"""

from __future__ import annotations

import logging
import os
from dataclasses import replace
from typing import Final

from pyrsistent import pmap

from aitune_fp.core.record.hit import hit_record
from aitune_fp.core.session import SessionPlan
from aitune_fp.core.strategies.incumbent import incumbent
from aitune_fp.effects.backends.base import Backend
from aitune_fp.effects.backends.eager import TorchEager
from aitune_fp.shell import decision_cache as cache
from aitune_fp.shell.baseline_reuse import BaselinePlan, plan_baseline
from aitune_fp.shell.drive import drive
from aitune_fp.shell.journal import Recorder, write_record
from aitune_fp.shell.recording import Heading
from aitune_fp.shell.resolve import _unique_names
from aitune_fp.shell.tune_options import TuneOptions
from aitune_fp.shell.tune_run import (
    Prepared,
    TuningRun,
    announce,
    finish_run,
    phase_clock,
)
from aitune_fp.shell.variants import variant_bases
from aitune_fp.shell.wall_clock import Stopwatch

SHORT_VERIFY: Final = 0.5
RACE_ENV: Final = "AITUNE_FP_RACE"
"""``AITUNE_FP_RACE=0``: the candidates do not race (each sweeps the whole ladder)."""
BASELINE: Final = TorchEager()
"""The baseline every tune is compared with (its config; the plan names it)."""
log = logging.getLogger("aitune_fp")


def decided(prepared: Prepared, options: TuneOptions, clock: Stopwatch) -> TuningRun:
    """The run, from the stored decision when it still holds (see the module's rules)."""
    setup = prepared.setup
    names = _unique_names(prepared.candidates)
    keys = cache.decision_keys(setup, names)
    folder = setup.workspace.cache_dir if setup.workspace is not None else None
    skip = options.fresh or options.reuse_baseline is not None
    hit = None if skip or folder is None else cache.lookup(folder, keys, setup.strategy)
    line = cache.FULL
    if hit is None and not skip and folder is not None:
        line = cache.missed_line(folder, options.model_name, keys)
        if line != cache.FULL:
            log.info("decision cache miss: %s", line)
    if hit is not None and hit.pick in names:
        since = clock.laps
        short = _rechecked(prepared, options, clock, hit)
        picked = short.record.selection.backend if short.record.selection else ""
        if picked == hit.pick:
            return _whole(short, hit, options)
        if short.tuned is not None:
            short.tuned.close()
        line = cache.retuned_line(hit, picked)
        clock.fold("decision_cache_hit", since)
    baseline = plan_baseline(setup, options.reuse_baseline)
    run = _session(prepared, dict(zip(names, prepared.candidates, strict=True)),
                   _said(baseline, line), options, clock)  # fmt: skip
    if folder is not None:
        cache.store(folder, keys, run.record, options.model_name)
    return run


def _whole(short: TuningRun, hit: cache.Hit, options: TuneOptions) -> TuningRun:
    """The hit's run with the stored run's whole record and the short run's re-verification
    (:func:`~aitune_fp.core.record.hit.hit_record`), written where the short one was."""
    record = hit_record(hit.record, short.record)
    if options.target is not None:
        write_record(record, options.target)
    if short.tuned is not None:
        short.tuned.record = record
    return TuningRun(record, short.tuned)


def _said(baseline: BaselinePlan, line: str) -> BaselinePlan:
    """``baseline`` with the record's decision line."""
    return replace(baseline, provenance=replace(baseline.provenance, decision=line))


def _rechecked(
    prepared: Prepared, options: TuneOptions, clock: Stopwatch, hit: cache.Hit
) -> TuningRun:
    """The short run: the pick against its runner-up (else against the recorded baseline)."""
    setup = prepared.setup
    by_name = dict(zip(_unique_names(prepared.candidates), prepared.candidates, strict=True))
    pair = (hit.pick, hit.runner_up) if hit.runner_up in by_name else (hit.pick,)
    chosen = {n: by_name[n] for n in pair}  # the pick first: the incumbent
    seconds = min(options.verify_seconds or SHORT_VERIFY, SHORT_VERIFY)
    alone = len(pair) == 2  # the pick against its runner-up, no baseline
    source = hit.record if setup.strategy.validate_performance and not alone else None
    baseline = _said(plan_baseline(setup, source), cache.cached_line(hit))
    sizes = cache.recorded_sizes(hit) or setup.batch_sizes
    kept = incumbent(setup.strategy) if alone else setup.strategy
    strategy = replace(kept, plan=replace(kept.plan, rounds=None))
    short = replace(setup, total=len(chosen) + 1, batch_sizes=sizes, strategy=strategy)
    return _session(replace(prepared, setup=short), chosen, baseline,
                    replace(options, verify_seconds=seconds), clock)  # fmt: skip


def _session(
    prepared: Prepared,
    chosen: dict[str, Backend],
    baseline: BaselinePlan,
    options: TuneOptions,
    clock: Stopwatch,
) -> TuningRun:
    """One session over ``chosen`` with ``baseline``, its record written and returned."""
    setup = prepared.setup
    names = tuple(chosen)
    bases = variant_bases(tuple(chosen.values()), names)
    ladder = () if os.environ.get(RACE_ENV, "1") == "0" else setup.batch_sizes
    plan = SessionPlan(setup.strategy, names, BASELINE.describe(), setup.settings.early_stop,
                       options.verify_seconds, baseline.profile, pmap(bases),
                       ladder=ladder)  # fmt: skip
    recorder = Recorder(setup, Heading(plan, options.model_name, baseline.provenance), clock,
                        options.target)  # fmt: skip
    recorder.begin(plan)
    announce(setup, plan, prepared, clock)
    configs = {**chosen, plan.baseline: BASELINE}  # a candidate named so is the same config
    run = drive(setup, plan, configs, phase=phase_clock(clock), journal=recorder.journal)
    return finish_run(recorder, run)
