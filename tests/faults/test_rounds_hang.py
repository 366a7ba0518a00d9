"""A runner that hangs in the final rounds or the verification (which run in the tune
process) is ended by the call timeout: it leaves, the others go on, nothing hangs."""

from __future__ import annotations

import time

import torch

from aitune_fp.core.rounds.burst import Burst
from aitune_fp.core.rounds.rounds_plan import RoundsPlan
from aitune_fp.core.verification.verification_plan import timing_plan, timing_verdict
from aitune_fp.effects.measure.call_guard import CallHung, call_deadline, guarded
from aitune_fp.effects.measure.rounds import time_paired
from tests.effects.rounds_fixtures import CPU, SAMPLES, SETTINGS, STRATEGY, Recorder
from tests.effects.test_rounds import participant

PLAN = RoundsPlan(min_rounds=4, max_rounds=4, judge_every=1, warmup_calls=0, burst=Burst())


class Hangs(Recorder):
    """A runner that sleeps far past any timeout after a few calls (a real hang)."""

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if self.log.count(self.name) >= 3:
            time.sleep(60)
        return super().__call__(x)


def test_a_guarded_call_past_the_deadline_raises_call_hung() -> None:
    """A call that sleeps past the open deadline raises CallHung after about the deadline."""
    began = time.monotonic()
    try:
        with call_deadline(0.3):
            guarded(lambda: time.sleep(30))()
        raise AssertionError("the call was not ended")
    except CallHung as hung:
        assert "0.3 s call timeout" in str(hung)
    assert time.monotonic() - began < 5


def test_a_runner_hanging_in_the_final_rounds_leaves_them() -> None:
    """In the rounds, a runner that hangs after two rounds is ended by the call timeout and
    keeps its completed rounds; the tune goes on in seconds, not minutes."""
    from aitune_fp.effects.measure.rounds import run_rounds

    log: list[str] = []
    people = [participant("eager", Recorder("eager", log)), participant("a", Hangs("a", log))]
    began = time.monotonic()
    with call_deadline(0.5):
        outcome = run_rounds(STRATEGY, people[0], people[1:], SAMPLES, CPU, PLAN, SETTINGS)
    assert time.monotonic() - began < 10
    rounds = {p.backend: len(p.rounds_ms.get(1, ())) for p in outcome.profiles}
    assert rounds["a"] == 2 and "fewer than two participants" in outcome.reason


def test_a_runner_hanging_in_the_verification_leaves_it() -> None:
    """In the verification's paired timing, a runner that hangs while warming up stays out,
    within the call timeout."""
    log: list[str] = []
    plan = timing_plan(1.0)
    began = time.monotonic()
    with call_deadline(0.5):
        timed = time_paired(
            [("eager", Recorder("eager", log), 1), ("a", Hangs("a", log), 1)],
            SAMPLES, CPU, plan,
            lambda _samples, done, elapsed, still: timing_verdict(plan, done, elapsed, still),
            SETTINGS,
        )  # fmt: skip
    assert time.monotonic() - began < 10
    assert timed.samples.get("a", ()) == ()
