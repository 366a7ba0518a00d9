"""A simulated machine that answers a session's commands: the decision benchmark's noise
model, for laws, examples and users who test their own strategies without a device.

Rules: each backend has a true latency per row (``true_ms`` at batch size 1; a batch of
``b`` rows costs ``ms * b ** s``, ``s`` the backend's own ``scalings`` entry, else
``scaling``: backends scaling differently rank differently at different batch sizes);
every call is that times the ambient level (a random walk of step ``drift`` in log
space, one step per call) times log-normal jitter (the backend's ``sigmas`` entry, else
``sigma``), and with probability ``outlier_p`` a stall: 2-6×, or with ``tail`` set a
heavy-tailed ``1 + Pareto(tail)`` (shape ``tail``: the smaller, the heavier);
a backend in ``spells`` has every call of its builds slowed by that factor (a slow spell
over its whole sweep window; the interleaved rounds are not in it); with ``keyed`` the
builds' calls are drawn from a stream of their own per backend and batch size, with no
drift (common random numbers: any two sessions on this machine that measure a backend
at a batch size see the same calls there). A ``Build`` answers
with ``calls`` sequential calls per batch size (its own ``batch_sizes``, else the
machine's; or the backend's failure, when it is
listed in ``failing``; a backend in ``no_runner`` profiles but keeps no runner); a
``TimeRounds`` or ``Verify`` times rotated rounds of 3-call bursts (the round's sample is
their median) and asks the command's judge after every round, the clock being the
simulated milliseconds, until it stops or ``max_rounds`` rounds were timed; a
``Prebuild`` is answered with no failures, drawing nothing from the noise stream (building
ahead times nothing). The same seed gives the same answers.

>>> from aitune_fp.core.session import SessionPlan, run
>>> from aitune_fp.core.strategies import confident, min_latency
>>> machine = SimulatedMachine({"eager": 2.0, "a": 1.0, "b": 1.9}, seed=1)
>>> session, done = run(SessionPlan(confident(min_latency), ("a", "b")), machine.answers())
>>> done.selection.unwrap().backend
'a'
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import median

from pyrsistent import pmap
from returns.result import Failure, Success

from aitune_fp.core.records import BackendFailure, Profile
from aitune_fp.core.rounds.rounds_plan import rotation
from aitune_fp.core.session import (
    Build,
    Command,
    Event,
    Judging,
    Prebuild,
    Prebuilt,
    Profiled,
    Timed,
    TimeRounds,
    Verify,
)

BURST = 3


@dataclass(frozen=True, slots=True)
class SimulatedMachine:
    """The machine's backends and noise (see the module's rules)."""

    true_ms: Mapping[str, float]
    seed: int = 0
    sigma: float = 0.05
    outlier_p: float = 0.02
    drift: float = 0.002
    scaling: float = 0.8
    batch_sizes: tuple[int, ...] = (1, 8)
    calls: int = 8
    max_rounds: int = 200
    failing: Mapping[str, str] = field(default_factory=dict)
    no_runner: frozenset[str] = frozenset()
    scalings: Mapping[str, float] = field(default_factory=dict)
    sigmas: Mapping[str, float] = field(default_factory=dict)
    spells: Mapping[str, float] = field(default_factory=dict)
    tail: float | None = None
    keyed: bool = False

    def per_row_ms(self, name: str, batch_size: int) -> float:
        """``name``'s true cost per row at ``batch_size`` (no noise, no spell).

        >>> SimulatedMachine({"a": 2.0}, scalings={"a": 0.5}).per_row_ms("a", 4)
        1.0
        """
        exponent = self.scalings.get(name, self.scaling) - 1.0
        return float(self.true_ms[name]) * math.pow(batch_size, exponent)

    def _noise(self, rng: random.Random, name: str) -> float:
        """One call's jitter times its stall, if any."""
        noise = math.exp(rng.gauss(0.0, self.sigmas.get(name, self.sigma)))
        if rng.random() < self.outlier_p:
            noise *= 1.0 + rng.paretovariate(self.tail) if self.tail else rng.uniform(2.0, 6.0)
        return noise

    def answers(self) -> Callable[[Command], Event | None]:
        """An interpreter: each command's event on this machine (one noise stream)."""
        rng = random.Random(self.seed)
        level = [0.0]

        def call(name: str, batch_size: int) -> float:
            level[0] += rng.gauss(0.0, self.drift)
            ms = self.per_row_ms(name, batch_size) * batch_size * math.exp(level[0])
            return float(ms * self._noise(rng, name))

        def answer(command: Command) -> Event | None:
            if isinstance(command, Build):
                return self._profiled(command, call)
            if isinstance(command, TimeRounds):
                return self._timed("rounds", command.participants, command.judge, call)
            if isinstance(command, Verify):
                who = tuple((key, backend, bs) for key, backend, bs in command.entries)
                return self._timed("verify", who, command.judge, call)
            if isinstance(command, Prebuild):
                return Prebuilt()
            return None

        return answer

    def _profiled(self, command: Build, call: Callable[[str, int], float]) -> Profiled:
        name = command.name
        if command.reuse is not None:
            return Profiled(name, Success(command.reuse), name not in self.no_runner)
        if name in self.failing:
            why = BackendFailure(name, self.failing[name], "fails on the simulated machine")
            return Profiled(name, Failure(why))
        sizes = command.batch_sizes or self.batch_sizes
        latencies = {bs: self._window(name, bs, call) for bs in sizes}
        seconds = sum(sum(v) for v in latencies.values()) / 1000.0
        return Profiled(
            name, Success(Profile(name, latencies)), name not in self.no_runner, seconds
        )

    def _window(self, name: str, batch_size: int, call: Callable[[str, int], float]) -> list[float]:
        """A build's calls of ``name`` at ``batch_size`` (its spell, its own stream if keyed)."""
        spell = self.spells.get(name, 1.0)
        if not self.keyed:
            return [call(name, batch_size) * spell for _ in range(self.calls)]
        rng = random.Random(f"{self.seed}/{name}/{batch_size}")
        ms = self.per_row_ms(name, batch_size) * batch_size * spell
        return [ms * self._noise(rng, name) for _ in range(self.calls)]

    def _timed(
        self,
        purpose: str,
        who: Sequence[tuple[str, int]] | Sequence[tuple[str, str, int]],
        judge: Judging,
        call: Callable[[str, int], float],
    ) -> Timed:
        entries = {w[0]: (w[-2], w[-1]) for w in who}  # key -> (backend, batch size)
        active = tuple(k for k, (b, _) in entries.items() if b not in self.no_runner)
        samples: dict[str, list[float]] = {k: [] for k in active}
        elapsed, done, reason = 0.0, 0, "fewer than two participants"
        while len(active) >= 2 and done < self.max_rounds:
            for key in rotation(active, done):
                backend, bs = entries[key]
                burst = [call(backend, bs) for _ in range(BURST)]
                elapsed += sum(burst) / 1000.0
                samples[key].append(median(burst))
            done += 1
            verdict = judge(samples, done, elapsed, active)
            active, reason = verdict.active, verdict.reason
            if verdict.stop:
                break
        else:
            reason = reason or f"{done} rounds"
        timed = pmap({k: tuple(v) for k, v in samples.items() if v})
        return Timed(purpose, timed, done, reason, elapsed)
