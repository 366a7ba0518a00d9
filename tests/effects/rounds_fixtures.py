"""Shared pieces of the final-rounds tests: tiny samples, a short one-call-a-round plan, a
recording runner."""

from __future__ import annotations

import torch

from aitune_fp.core.rounds.burst import Burst
from aitune_fp.core.rounds.rounds_plan import RoundsPlan
from aitune_fp.core.strategies import confident, min_latency
from aitune_fp.effects.inputs.samples import normalise_samples
from aitune_fp.effects.measure.timing import ProfileSettings

SAMPLES = normalise_samples([torch.randn(1, 8) for _ in range(3)])
CPU = torch.device("cpu")
PLAN = RoundsPlan(min_rounds=4, max_rounds=6, judge_every=1, warmup_calls=1, burst=Burst())
STRATEGY = confident(min_latency, resamples=50, rounds=PLAN)
SETTINGS = ProfileSettings(input_mode="same")


class Recorder:
    """A runner that records its name on every call; it may raise after some calls."""

    def __init__(self, name: str, log: list[str], fail_after: int | None = None) -> None:
        self.name, self.log, self.fail_after = name, log, fail_after

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        self.log.append(self.name)
        if self.fail_after is not None and self.log.count(self.name) > self.fail_after:
            raise RuntimeError(f"{self.name} broke")
        return x
