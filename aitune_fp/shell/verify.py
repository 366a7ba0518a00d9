"""Prove the pick: re-measure the winner against its runner-ups after selection.

Rules:
- runs only when asked (``verify_seconds`` > 0) and something was selected; the
  challengers are the selection's closest runner-ups
  (:func:`~aitune_fp.core.measure.verification.challengers`, at most ``CHALLENGERS``),
  timed with the very runners the tune built and profiled (the driver keeps them alive
  when a verification is planned), each at the batch size it was selected at;
- the timing is :func:`~aitune_fp.effects.rounds.time_paired` (primed, warmed to steady
  state, interleaved rounds for ``verify_seconds``, warm-up included); the decision is the
  core's (:func:`~aitune_fp.core.measure.verification.judge`), and the selection becomes
  the verified one (:func:`~aitune_fp.core.measure.verification.verified`: the same when
  it holds, else the better challenger, noted in one line);
- a winner or challengers without a live runner, or a timing that leaves fewer than two
  participants with samples, give no verification (``None``), logged, never an error.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from returns.result import Failure, Result, Success

from aitune_fp.core.measure.verification import (
    CHALLENGERS,
    Paired,
    Verification,
    challengers,
    judge,
    timing_plan,
    timing_verdict,
    verified,
)
from aitune_fp.core.records import Selection, TuneError
from aitune_fp.effects.isolation import materialized
from aitune_fp.effects.rounds import time_paired
from aitune_fp.shell.drive import RunState, Setup

log = logging.getLogger("aitune_fp")


def _runners(run: RunState) -> dict[str, Callable[..., Any]]:
    """The live runners by backend, the baseline's included."""
    pairs = [*run.live.items()]
    if run.runs and run.runs[0].built is not None:
        pairs.append((run.runs[0].name, run.runs[0].built))
    runners = {}
    for name, built in pairs:
        try:
            runners[name] = materialized(built).runner
        except RuntimeError as error:  # it ran in its worker but cannot be made here
            log.warning("%s leaves the verification: %s", name, error)
    return runners


def with_verification(
    setup: Setup, run: RunState, outcome: Result[Selection, TuneError]
) -> tuple[Result[Selection, TuneError], Verification | None]:
    """The selection after verification, and the verification (``None`` when none ran)."""
    seconds = setup.verify_seconds
    if not seconds or seconds <= 0.0 or isinstance(outcome, Failure):
        return outcome, None
    selection = outcome.unwrap()
    runners = _runners(run)
    names = [n for n in challengers(setup.strategy, selection, CHALLENGERS) if n in runners]
    if selection.backend not in runners or not names:
        log.info("no verification: the winner or its runner-ups have no live runner")
        return outcome, None
    sizes = {s.backend: s.result.selected_batch_size for s in selection.ranking}
    if selection.baseline is not None:
        sizes[selection.baseline.backend] = selection.baseline.result.selected_batch_size
    sizes[selection.backend] = selection.result.selected_batch_size
    chosen = [selection.backend, *names]
    setup.emit("stage", stage="verification", done=len(run.runs))
    log.info("verification: %s against %s for %g s", chosen[0], ", ".join(names), seconds)
    plan = timing_plan(seconds)
    timed = time_paired(
        [(n, runners[n], sizes[n]) for n in chosen],
        setup.samples,
        setup.device,
        plan,
        lambda done, elapsed, still: timing_verdict(plan, done, elapsed, still),
        setup.settings,
    )
    paired = {n: Paired(n, sizes[n], timed.samples[n]) for n in chosen if timed.samples.get(n)}
    others = tuple(paired[n] for n in names if n in paired)
    if selection.backend not in paired or not others:
        log.warning("no verification: fewer than two backends could be timed (%s)", timed.reason)
        return outcome, None
    kind = setup.strategy.metric.kind or "latency"
    verification = judge(paired[selection.backend], others, kind, seconds=timed.seconds)
    (log.info if verification.holds else log.warning)("%s", verification.reason)
    return Success(verified(selection, verification)), verification
