"""One tune from a fixed setup, through the decision cache: the shell half of the core's
decider (:mod:`aitune_fp.core.session.program`).

Rules:
- the decider chooses, this module does: it reads the stored decision once
  (:func:`~aitune_fp.shell.decision_cache.read`), asks
  :func:`~aitune_fp.core.session.program.first` what to run, runs that session, asks
  :func:`~aitune_fp.core.session.program.after` whether a re-check's pick stands, and
  writes the decision of a full tune that selected something once
  (:func:`~aitune_fp.shell.decision_cache.store`);
- a re-check that stands gives the stored run's whole record with the short run's
  re-verification beside the stored one (:func:`~aitune_fp.core.record.hit.hit_record`);
  one that does not is closed, its stages folded into one ``decision_cache_hit`` stage of
  the wall account (:meth:`~aitune_fp.shell.wall_clock.Stopwatch.fold`), and the full tune
  follows, whose record says so;
- a miss whose label had a stored decision says which keys changed, in the record and one
  log line;
- the baseline's config and the race switch are the options' values
  (:attr:`~aitune_fp.shell.tune_options.TuneOptions.baseline_config`,
  :attr:`~aitune_fp.shell.tune_options.TuneOptions.racing`), carried by the plan.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from pyrsistent import pmap

from aitune_fp.core.record.decisions import FULL
from aitune_fp.core.record.hit import hit_record
from aitune_fp.core.session import SessionPlan
from aitune_fp.core.session.program import (
    Full,
    ProgramPlan,
    Recheck,
    Stand,
    Stored,
    after,
    first,
)
from aitune_fp.effects.backends.base import Backend
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

log = logging.getLogger("aitune_fp")


def decided(prepared: Prepared, options: TuneOptions, clock: Stopwatch) -> TuningRun:
    """The run, from the stored decision when it still holds (see the module's rules)."""
    setup = prepared.setup
    keys = cache.decision_keys(setup, _unique_names(prepared.candidates))
    folder = setup.workspace.cache_dir if setup.workspace is not None else None
    plan = _program_plan(prepared, options, keys, skip=folder is None)
    found = cache.Found(None, None)
    if folder is not None and not plan.skip:
        found = cache.read(folder, keys, options.model_name, setup.strategy)
    step = first(found.stored, plan, found.last)
    if isinstance(step, Recheck) and found.stored is not None:
        rechecked = _recheck_run(prepared, options, clock, step, found.stored, plan)
        if isinstance(rechecked, TuningRun):
            return rechecked
        step = rechecked
    assert isinstance(step, Full)
    if step.line != FULL and found.stored is None:
        log.info("decision cache miss: %s", step.line)
    run = _full(prepared, options, clock, step)
    if folder is not None:
        cache.store(folder, keys, run.record, options.model_name)
    return run


def _recheck_run(
    prepared: Prepared,
    options: TuneOptions,
    clock: Stopwatch,
    step: Recheck,
    stored: Stored,
    plan: ProgramPlan,
) -> TuningRun | Full:
    """The re-check's run when its pick stands, else the full tune the decider asks for
    (the short run closed and its stages folded into one)."""
    since = clock.laps
    short = _rechecked(prepared, options, clock, step, stored)
    picked = short.record.selection.backend if short.record.selection else ""
    then = after(picked, stored, step, plan)
    if isinstance(then, Stand):
        return _whole(short, stored, options)
    if short.tuned is not None:
        short.tuned.close()
    clock.fold("decision_cache_hit", since)
    return then


def _full(prepared: Prepared, options: TuneOptions, clock: Stopwatch, step: Full) -> TuningRun:
    """The full session over every candidate, its record saying ``step``'s line."""
    by_name = dict(zip(_unique_names(prepared.candidates), prepared.candidates, strict=True))
    baseline = _said(plan_baseline(prepared.setup, options.reuse_baseline), step.line)
    return _session(prepared, by_name, baseline, options, clock, step.ladder)


def _program_plan(
    prepared: Prepared, options: TuneOptions, keys: dict[str, str], *, skip: bool
) -> ProgramPlan:
    """What the decider needs of this run (``skip``: no cache folder)."""
    setup = prepared.setup
    skipped = skip or options.fresh or options.reuse_baseline is not None
    return ProgramPlan(
        _unique_names(prepared.candidates),
        setup.strategy,
        setup.request.batch_sizes,
        options.verify_seconds,
        options.baseline_config.describe(),
        options.racing,
        skipped,
        pmap(keys),
    )


def _whole(short: TuningRun, stored: Stored, options: TuneOptions) -> TuningRun:
    """The hit's run with the stored run's whole record and the short run's re-verification
    (:func:`~aitune_fp.core.record.hit.hit_record`), written where the short one was."""
    record = hit_record(stored.record, short.record)
    if options.target is not None:
        write_record(record, options.target)
    if short.tuned is not None:
        short.tuned.record = record
    return TuningRun(record, short.tuned)


def _said(baseline: BaselinePlan, line: str) -> BaselinePlan:
    """``baseline`` with the record's decision line."""
    return replace(baseline, provenance=replace(baseline.provenance, decision=line))


def _rechecked(
    prepared: Prepared, options: TuneOptions, clock: Stopwatch, step: Recheck, stored: Stored
) -> TuningRun:
    """The short run the decider asked for: the pick against its runner-up (else against
    the stored run's baseline)."""
    setup = prepared.setup
    by_name = dict(zip(_unique_names(prepared.candidates), prepared.candidates, strict=True))
    chosen = {n: by_name[n] for n in step.pair}  # the pick first: the incumbent
    source = stored.record if step.stored_baseline else None
    baseline = _said(plan_baseline(setup, source), step.line)
    short = replace(setup.swept(step.sizes, step.strategy), total=len(chosen) + 1)
    return _session(
        replace(prepared, setup=short),
        chosen,
        baseline,
        replace(options, verify_seconds=step.verify_seconds),
        clock,
        step.sizes if options.racing else (),
    )


def _session(
    prepared: Prepared,
    chosen: dict[str, Backend],
    baseline: BaselinePlan,
    options: TuneOptions,
    clock: Stopwatch,
    ladder: tuple[int, ...],
) -> TuningRun:
    """One session over ``chosen`` with ``baseline``, racing over ``ladder`` (none: no
    race), its record written and returned."""
    setup = prepared.setup
    names = tuple(chosen)
    bases = variant_bases(tuple(chosen.values()), names)
    reference, early = options.baseline_config, setup.request.settings.early_stop
    plan = SessionPlan(
        setup.strategy,
        names,
        reference.describe(),
        early,
        options.verify_seconds,
        baseline.profile,
        pmap(bases),
        ladder=ladder,
    )
    recorder = Recorder(
        setup, Heading(plan, options.model_name, baseline.provenance), clock, options.target
    )
    recorder.begin(plan)
    announce(setup, plan, prepared, clock)
    configs = {**chosen, plan.baseline: reference}  # a candidate named so is the same config
    run = drive(setup, plan, configs, phase=phase_clock(clock), journal=recorder.journal)
    return finish_run(recorder, run)
