"""The early-stop rule on the synthetic noise model: how often it stops the true best, what
it saves, and what it does to the decision.

Prints figures; no pass/fail. Each trial is one of ``benchmarks/decision_quality.py`` (a
baseline and 2–4 candidates with known true latencies, per-call jitter, outliers, drift and
noisy-neighbour episodes; one batch size, ``min_latency``). Every backend in turn gets 10
warm-up calls and a probe of 5 timed calls; the early-stop rule then judges the probe
against the current best (the fold's leader so far, or the baseline) and either stops it
there or times the remaining 15 calls (20 in all, the reference's schedule). Both arms,
with and without early stops, see the same trial and the same noise seed.

- ``winner stopped``: share of trials whose truly fastest backend was stopped early
  (never the baseline: the rule never stops it);
- ``near stopped``: share of trials where a backend within 5 % of the truly fastest was;
- ``calls``: timed calls per tune against the full schedule's;
- ``wrong`` / ``regret``: as in the decision-quality benchmark (regret > 5 %; mean regret),
  with and without early stops.

    python benchmarks/early_stop.py [--trials 2000] [--seed 1]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from decision_quality import NAMES, TIMED, Machine, Trial, make_trial
from returns.result import Success

from aitune_fp.core.fold import finish, fold_states
from aitune_fp.core.measure.early_stop import (
    WINNER_STOP_RATE,
    EarlyStopRule,
    Probe,
    early_stop_for,
)
from aitune_fp.core.records import (
    BackendProfilingResult,
    Candidate,
    Profile,
    Scored,
    TuneState,
)
from aitune_fp.core.strategies import confident, min_latency
from aitune_fp.core.strategy import Strategy

PROBE = 5
NEAR = 0.05


@dataclass(frozen=True)
class TrialOutcome:
    """One tune of one trial: its choice, timed calls, and who was stopped early."""

    choice: int
    calls: int
    stopped: tuple[int, ...]


def current_best(
    strategy: Strategy, base: Scored, best: Scored | None
) -> tuple[str, BackendProfilingResult]:
    """The fold's leader when it beats the baseline, else the baseline."""
    if best is not None and strategy.compare(best.result, base.result):
        return best.backend, best.result
    return base.backend, base.result


def tune_trial(
    trial: Trial, rng: random.Random, strategy: Strategy, rule: EarlyStopRule | None
) -> TrialOutcome:
    """Profile the baseline fully, then each candidate with a probe and, unless stopped
    early, the rest of the schedule; fold as the shell does (each candidate profiled when
    the fold pulls it, probed against the state the fold has reached)."""
    machine = Machine(trial, rng)
    baseline = Profile(NAMES[0], {1: machine.sequential(0, TIMED)})
    stopped: list[int] = []
    reached: list[TuneState] = []  # the fold's latest state, read when it pulls the next

    def candidates() -> Iterator[Candidate]:
        for i in range(1, len(trial.true_ms)):
            state = reached[-1]
            base = state.baseline
            assert base is not None
            samples = machine.sequential(i, PROBE)
            if rule is not None:
                name, best = current_best(strategy, base, state.best)
                _, decision = rule.step(
                    rule.start(name, best, baseline=False), Probe(1, tuple(samples))
                )
                if decision.stop:
                    stopped.append(i)
            if rule is None or not stopped or stopped[-1] != i:
                samples += [machine.call(i, timed=True) for _ in range(TIMED - PROBE)]
            yield Success(Profile(NAMES[i], {1: samples}))

    for state in fold_states(strategy, candidates(), Success(baseline)):
        reached.append(state)
    choice = NAMES.index(finish(strategy, reached[-1]).unwrap().backend)
    return TrialOutcome(choice, machine.timed, tuple(stopped))


@dataclass
class Figures:
    """What one arm measured over the trials."""

    winner_stopped: float
    near_stopped: float
    calls: float
    wrong: float
    regret: float


def run(trials: int, seed: int, strategy: Strategy, margin: float | None) -> Figures:
    """One arm (``margin=None``: no early stops) over ``trials`` seeded trials."""
    rule = None if margin is None else early_stop_for(strategy, margin=margin)
    master = random.Random(seed)
    winner = near = 0
    calls, regrets = [], []
    for _ in range(trials):
        trial = make_trial(random.Random(master.getrandbits(64)))
        out = tune_trial(trial, random.Random(master.getrandbits(64)), strategy, rule)
        best = min(trial.true_ms)
        fastest = trial.true_ms.index(best)
        winner += fastest in out.stopped
        near += any(trial.true_ms[i] <= best * (1 + NEAR) for i in out.stopped)
        calls.append(out.calls / (TIMED * len(trial.true_ms)))
        regrets.append(trial.true_ms[out.choice] / best - 1.0)
    return Figures(
        winner / trials,
        near / trials,
        statistics.fmean(calls),
        sum(r > 0.05 + 1e-12 for r in regrets) / trials,
        statistics.fmean(regrets),
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Print both strategies' figures with and without early stops, for a few margins."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    began = time.perf_counter()
    print(f"early stop on the synthetic noise model: {args.trials} trials, probe {PROBE} calls")
    print(
        f"  {'strategy':<22}{'margin':>8}{'winner stopped':>16}{'near stopped':>14}"
        f"{'calls':>7}{'wrong':>7}{'regret':>8}"
    )
    headline: dict[str, Figures] = {}
    for strategy in (min_latency, confident(min_latency, rounds=None)):
        for margin in (None, 0.05, 0.10, 0.25):
            f = run(args.trials, args.seed, strategy, margin)
            label = "off" if margin is None else f"{margin:.0%}"
            print(
                f"  {strategy.name:<22}{label:>8}{f.winner_stopped:>16.2%}{f.near_stopped:>14.2%}"
                f"{f.calls:>7.2f}{f.wrong:>7.1%}{f.regret:>8.2%}"
            )
            headline[f"{strategy.name}/{label}"] = f
    parts = []
    for name in ("min_latency", "confident(min_latency)"):
        on, off = headline[f"{name}/10%"], headline[f"{name}/off"]
        parts.append(
            f"{name}: winner_stopped={on.winner_stopped * 100:.2f}% "
            f"(stated <= {WINNER_STOP_RATE * 100:g}%) calls={on.calls:.2f} "
            f"wrong={off.wrong * 100:.1f}%->{on.wrong * 100:.1f}% "
            f"regret={off.regret * 100:.2f}%->{on.regret * 100:.2f}%"
        )
    print("early_stop (margin 10%): " + "; ".join(parts))
    print(f"({time.perf_counter() - began:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
