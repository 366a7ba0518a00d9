"""Interleaved final rounds with real (tiny) runners: order, alignment, failures, re-fold."""

from __future__ import annotations

from collections.abc import Callable

import torch

from aitune_fp.core.records import Profile
from aitune_fp.core.rounds.burst import Burst
from aitune_fp.core.rounds.rounds_plan import RoundsPlan
from aitune_fp.effects.measure.rounds import Participant, run_rounds
from tests.effects.rounds_fixtures import CPU, PLAN, SAMPLES, SETTINGS, STRATEGY, Recorder


def participant(name: str, runner: Callable[[torch.Tensor], torch.Tensor]) -> Participant:
    """A participant at batch size 1 with a small swept profile."""
    return Participant(name, runner, Profile(name, {1: [1.0, 1.0, 1.0]}), 1)


def test_rounds_rotate_the_order_after_priming_and_warm_up() -> None:
    """Each participant gets priming plus warm-up calls, then rounds go A B C, B C A, …"""
    log: list[str] = []
    people = [participant(n, Recorder(n, log)) for n in ("eager", "a", "b")]
    outcome = run_rounds(STRATEGY, people[0], people[1:], SAMPLES, CPU, PLAN, SETTINGS)
    warm = PLAN.warmup_calls + 1
    assert log[: 3 * warm] == ["eager"] * warm + ["a"] * warm + ["b"] * warm
    assert log[3 * warm : 3 * warm + 6] == ["eager", "a", "b", "a", "b", "eager"]
    assert PLAN.min_rounds <= outcome.rounds <= PLAN.max_rounds
    assert outcome.reason


def test_round_samples_are_aligned_prefixes() -> None:
    """Every participant has at most one sample per round, and someone has all of them."""
    log: list[str] = []
    people = [participant(n, Recorder(n, log)) for n in ("eager", "a", "b")]
    outcome = run_rounds(STRATEGY, people[0], people[1:], SAMPLES, CPU, PLAN, SETTINGS)
    counts = [len(p.rounds_ms.get(1, ())) for p in outcome.profiles]
    assert all(PLAN.min_rounds <= c <= outcome.rounds for c in counts)
    assert max(counts) == outcome.rounds
    assert [p.backend for p in outcome.profiles] == ["eager", "a", "b"]


def test_a_runner_that_raises_leaves_the_rounds_without_crashing() -> None:
    """A participant that raises keeps the rounds it completed; the others go on."""
    log: list[str] = []
    plan = RoundsPlan(min_rounds=6, max_rounds=6, judge_every=1, warmup_calls=0, burst=Burst())
    broken = participant("a", Recorder("a", log, fail_after=3))
    people = [participant("eager", Recorder("eager", log)), broken]
    outcome = run_rounds(STRATEGY, people[0], people[1:], SAMPLES, CPU, plan, SETTINGS)
    rounds = {p.backend: len(p.rounds_ms.get(1, ())) for p in outcome.profiles}
    assert rounds["a"] == 2  # priming took one call, two rounds succeeded
    assert outcome.reason == "after 3 rounds fewer than two participants were left"


def test_a_runner_that_raises_at_warm_up_stays_out() -> None:
    """A participant failing before the first round gets no round samples; nothing raises."""
    log: list[str] = []
    people = [
        participant("eager", Recorder("eager", log)),
        participant("a", Recorder("a", log, fail_after=0)),
        participant("b", Recorder("b", log)),
    ]
    outcome = run_rounds(STRATEGY, people[0], people[1:], SAMPLES, CPU, PLAN, SETTINGS)
    rounds = {p.backend: len(p.rounds_ms.get(1, ())) for p in outcome.profiles}
    assert rounds["a"] == 0 and rounds["eager"] >= PLAN.min_rounds
