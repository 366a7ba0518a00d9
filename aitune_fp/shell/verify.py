"""Prove the pick: re-measure the winner against its runner-ups after selection.

Rules:
- runs only when asked (``verify_seconds`` > 0) and something was selected; the
  challengers are the selection's closest runner-ups
  (:func:`~aitune_fp.core.measure.verification_plan.challengers`, at most ``CHALLENGERS``),
  timed with the very runners the tune built and profiled (the driver keeps them alive
  when a verification is planned), each at the batch size it was selected at, the second
  only while the sweeps leave it unsettled (``unsettled``); under a throughput metric the
  winner also takes part at other batch sizes of its sweep (``plateau``:
  ``backend@batch``), which count when the strategy admits them on their samples;
- the timing is :func:`~aitune_fp.effects.rounds.time_paired` (primed, warmed to steady
  state, interleaved rounds, warm-up included), judged as it goes by the core
  (:func:`~aitune_fp.core.measure.verification.judge`) and stopped on evidence or on its
  budget (:func:`~aitune_fp.core.measure.verification_plan.evidence_verdict`:
  ``verify_seconds``, extended to at most ``EXTEND`` times it while a challenger leans
  beyond the margin); the decision is the core's judgement of all the rounds, and the
  selection becomes
  the verified one (:func:`~aitune_fp.core.measure.verification.verified`: the same when
  it holds, else the better challenger, noted in one line);
- a winner or challengers without a live runner, or a timing that leaves fewer than two
  participants with samples, give no verification (``None``), logged, never an error.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from returns.result import Failure, Result, Success

from aitune_fp.core.measure.rounds import RoundsVerdict
from aitune_fp.core.measure.verification import (
    MIN_ROUNDS,
    Paired,
    Verification,
    judge,
    verified,
)
from aitune_fp.core.measure.verification_plan import (
    CHALLENGERS,
    EXTEND,
    admits,
    at_batch_size,
    challengers,
    evidence_verdict,
    plateau,
    timing_plan,
    unsettled,
)
from aitune_fp.core.records import Profile, Selection, TuneError
from aitune_fp.effects.isolation import materialized
from aitune_fp.effects.rounds import time_paired
from aitune_fp.shell.drive import RunState, Setup, as_result

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


def _profile(run: RunState, backend: str) -> Profile | None:
    """The backend's profile in this run (with its rounds when it had them)."""
    found: list[Profile] = [c.unwrap() for c in run.fed if isinstance(c, Success)]
    found += [r.unwrap() for r in map(as_result, run.runs) if isinstance(r, Success)]
    return next((p for p in found if p.backend == backend), None)


def with_verification(
    setup: Setup, run: RunState, outcome: Result[Selection, TuneError]
) -> tuple[Result[Selection, TuneError], Verification | None]:
    """The selection after verification, and the verification (``None`` when none ran)."""
    seconds = setup.verify_seconds
    if not seconds or seconds <= 0.0 or isinstance(outcome, Failure):
        return outcome, None
    selection = outcome.unwrap()
    runners = _runners(run)
    strategy = setup.strategy
    ups = [n for n in challengers(strategy, selection, CHALLENGERS) if n in runners]
    names = list(unsettled(strategy, selection, ups))
    kind = strategy.metric.kind or "latency"
    winner, size = selection.backend, selection.result.selected_batch_size
    profile = _profile(run, winner) if kind != "latency" else None
    neighbours = plateau(strategy, profile, size) if profile is not None else ()
    if winner not in runners or not (names or neighbours):
        log.info("no verification: the winner or its runner-ups have no live runner")
        return outcome, None
    sizes = {s.backend: s.result.selected_batch_size for s in selection.ranking}
    if selection.baseline is not None:
        sizes[selection.baseline.backend] = selection.baseline.result.selected_batch_size
    sizes[winner] = size
    chosen = [winner, *names]
    labels = {f"{winner}@{bs}": bs for bs in neighbours}
    setup.emit("stage", stage="verification", done=len(run.runs))
    against = ", ".join([*names, *labels])
    log.info("verification: %s@%d against %s for %g s", winner, size, against, seconds)
    plan = timing_plan(seconds, EXTEND)
    entries = [(n, n, sizes[n]) for n in chosen] + [(k, winner, bs) for k, bs in labels.items()]

    def judged(so_far: Mapping[str, Sequence[float]], elapsed: float) -> Verification | None:
        """The core's judgement of the samples so far (``None``: fewer than two to judge)."""
        got = {
            key: Paired(backend, bs, tuple(so_far[key]), "" if key == backend else key)
            for key, backend, bs in entries
            if so_far.get(key)
        }
        near = [got[k] for k in labels if k in got and admits(strategy, got[k])]
        others = (*(got[n] for n in names if n in got), *near)
        if winner not in got or not others:
            return None
        budget = (seconds, plan.max_seconds)
        return judge(got[winner], others, kind, seconds=elapsed, budget=budget)

    def stop(
        so_far: Mapping[str, Sequence[float]], done: int, elapsed: float, still: tuple[str, ...]
    ) -> RoundsVerdict:
        v = judged(so_far, elapsed) if done >= MIN_ROUNDS else None
        outcome = v.outcome if v is not None else "too few rounds"
        return evidence_verdict(seconds, plan, done, elapsed, still, outcome)

    timed = time_paired(
        [(key, runners[backend], bs) for key, backend, bs in entries],
        setup.samples,
        setup.device,
        plan,
        stop,
        setup.settings,
        warmup_of=seconds,
    )
    verification = judged(timed.samples, timed.seconds)
    if verification is None:
        log.warning("no verification: fewer than two backends could be timed (%s)", timed.reason)
        return outcome, None
    log.info("verification timing: %s", timed.reason)
    (log.info if verification.holds else log.warning)("%s", verification.reason)
    alternatives = {
        (winner, bs): at_batch_size(strategy, profile, bs)
        for bs in labels.values()
        if profile is not None
    }
    return Success(verified(selection, verification, alternatives)), verification
