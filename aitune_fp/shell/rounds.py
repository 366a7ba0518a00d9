"""The final rounds wired to the fold: the core says who is timed, effects time them.

Rules: :func:`final_rounds` asks :func:`~aitune_fp.core.measure.final_rounds.setup_rounds`
who takes part, times them with :func:`~aitune_fp.effects.rounds.run_rounds` when at
least two would be timed, and re-folds with their round samples
(:func:`~aitune_fp.core.measure.final_rounds.refold`); without rounds the state comes
back as it was (with a note when the sweeps settled the decision).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from aitune_fp.core.measure.final_rounds import refold, rounds_note, setup_rounds, skipped
from aitune_fp.core.records import Candidate, Profile, TuneState
from aitune_fp.core.strategy import Strategy
from aitune_fp.effects.inputs import Samples
from aitune_fp.effects.profiler import ProfileSettings
from aitune_fp.effects.rounds import Participant, RoundsOutcome, run_rounds

log = logging.getLogger("aitune_fp")


def final_rounds(
    strategy: Strategy,
    state: TuneState,
    baseline: Profile | None,
    fed: Sequence[Candidate],
    runners: Mapping[str, Callable[..., Any]],
    samples: Samples,
    device: torch.device,
    settings: ProfileSettings = ProfileSettings(),
    *,
    sweep_seconds: float | None = None,
) -> tuple[TuneState, RoundsOutcome | None]:
    """Run the strategy's final rounds after the sweeps and re-fold with their samples.

    ``state`` is the fold's state after ``baseline`` and every candidate in ``fed`` (in
    order); ``runners`` maps the backends still alive to their runners; ``sweep_seconds``,
    the wall time the sweeps took, caps the rounds' time at ``plan.sweep_share`` times it.
    """
    profiles = {p.backend: p for p in (r.value_or(None) for r in fed) if p is not None}
    setup = setup_rounds(
        strategy,
        state,
        profiles,
        runners,
        baseline.backend if baseline is not None else None,
        sweep_seconds,
    )
    if setup is None:
        return state, None
    if not setup.runs:
        if setup.reason:
            log.info("no final rounds: %s", setup.reason)
        return skipped(state, setup), None
    log.info("final rounds: %s", ", ".join(setup.timed))
    if setup.reason:
        log.info("%s", setup.reason)
    base = None
    if setup.baseline is not None and baseline is not None:
        base = Participant(baseline.backend, runners[baseline.backend], baseline, setup.baseline[1])
    chosen = [Participant(n, runners[n], profiles[n], bs) for n, bs in setup.candidates]
    outcome = run_rounds(
        strategy,
        base,
        chosen,
        samples,
        device,
        setup.plan,
        settings,
        time_baseline=setup.time_baseline,
    )
    log.info("final rounds: %s (%.1f s)", outcome.reason, outcome.seconds)
    timed = {p.backend: p for p in outcome.profiles}
    note = rounds_note(outcome.rounds, outcome.seconds, outcome.reason, setup)
    return refold(strategy, baseline, fed, timed, note), outcome
