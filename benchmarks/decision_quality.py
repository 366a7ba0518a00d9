"""Decision quality under noise: the reference rule (mean, strict ``>``) against ours.

Prints figures side by side in one run; no pass/fail.

Synthetic part (pure, fast; ``--quick`` runs only this): each trial draws a baseline and
candidates with known true latencies, then simulates a shared machine: per-call log-normal
jitter, rare large outliers (preemption, page faults), a slow random-walk drift of the
whole machine, and sometimes a noisy-neighbour episode that slows everything for a while.
Every method sees the same machine timeline (the same drift and episodes at the same
moments); each draws its own per-call noise. The budget is the reference's: 20 timed calls
per backend (``calls`` in the table: the share of it a method used, mean and max):

- ``reference``: each backend in turn, 10 warm-up + 20 timed calls, mean, strict ``>``;
- ``confident-seq``: the same sequential samples, decided by ``confident(min_latency)``;
- ``ours``: ``confident(min_latency)`` as shipped: a short sequential sweep (10 warm-up +
  5 timed calls per backend) picks the contenders; where the sweeps leave the decision
  open, interleaved rounds (order rotated per round, after one priming call each) go on
  until it is clear, within the plan's budget (the rounds take at most ``sweep_share`` times
  the sweeps' calls, the call count standing for time) and at most twice the reference's
  timed calls (``ours-strict``: at most the reference's); the decision is taken on the
  paired rounds;
- ``ours+verify``: ``ours``, then the command line's verification of its pick on the same
  machine (:func:`verify_on_machine`: 12 rounds asked, extended to 36 while a challenger
  leans beyond the margin; its calls come on top of ``ours``').

A decision is *wrong* when the chosen backend is truly more than 5 % slower than the truly
fastest (a material loss: a slower backend deployed, or a real speedup missed); the table
also gives the rates above 0 (strict), 1 and 2 %. *Regret* is ``true latency of the choice
/ best true latency - 1``.

Race part (``benchmarks/decision_race.py``, after the synthetic part): max-throughput
sessions on simulated machines whose rankings cross between batch sizes, unraced and
raced side by side (regret against the ladder's true best, the sweep's seconds).

Real part (without ``--quick``): tunes the embedded models on CPU with the reference rule
and with ours, with and without a noisy neighbour process, against a ground truth from a
long interleaved run (see ``docs/decision-quality.md``).

    python benchmarks/decision_quality.py --quick [--trials 300] [--seed 1]

``--real`` runs ``benchmarks/decision_real.py`` instead: the demo models tuned under each
strategy, before and after issue 16's settings, each tune's own artifacts re-measured in a
long interleaved window (true-best count, regret p50/p95/max):

    python benchmarks/decision_quality.py --real [--window-seconds 60] [--models mlp]
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

from returns.result import Success

from aitune_fp.core.fold import fold_all, tune
from aitune_fp.core.records import Profile
from aitune_fp.core.rounds.round_members import RoundsVerdict, judge_rounds, round_members
from aitune_fp.core.rounds.rounds_plan import RoundsPlan, rotation
from aitune_fp.core.strategies import confident, min_latency
from aitune_fp.core.strategy import Strategy
from aitune_fp.core.verification.judge import Paired, judge
from aitune_fp.core.verification.verification_plan import (
    CHALLENGERS,
    EXTEND,
    challengers,
    unsettled,
)
from aitune_fp.effects.measure.interleave import interleave

WARMUP = 10
TIMED = 20
OURS_CAP = 2.0
VERIFY_ROUNDS = 12  # the asked verification budget, in rounds (3 s: 7-20 rounds on the demos)
INDIFFERENCE = 0.05
NAMES = ("eager", "cand1", "cand2", "cand3", "cand4")


# --------------------------------------------------------------------------- the machine
@dataclass(frozen=True)
class Trial:
    """One synthetic tuning problem: true latencies and the machine's noise."""

    true_ms: tuple[float, ...]  # index 0 is the baseline
    jitter: tuple[float, ...]  # log-normal sigma per backend
    outlier_p: float
    ambient: tuple[float, ...]  # machine slowdown factor per call index


def speedup_draw(rng: random.Random) -> float:
    """A candidate's true speedup over the baseline, from a mix of what tuning meets."""
    u = rng.random()
    if u < 0.25:
        return rng.uniform(0.3, 0.8)  # much slower (a poor fit for the model)
    if u < 0.45:
        return rng.uniform(0.8, 0.97)  # somewhat slower
    if u < 0.70:
        return rng.uniform(0.97, 1.03)  # about the same kernels
    if u < 0.85:
        return rng.uniform(1.03, 1.15)  # modestly faster
    return math.exp(rng.uniform(math.log(1.15), math.log(3.0)))  # clearly faster


def ambient_series(rng: random.Random, length: int) -> tuple[float, ...]:
    """Machine slowdown per call: slow random-walk drift plus maybe a neighbour episode."""
    total_drift = rng.uniform(0.0, 0.08)  # sd of the log drift over the whole tune
    step_sd = total_drift / math.sqrt(length)
    level = 0.0
    series = []
    episode = None
    if rng.random() < 0.3:
        begin = rng.randrange(length)
        episode = (begin, begin + int(length * rng.uniform(0.1, 0.4)), rng.uniform(1.05, 1.3))
    for t in range(length):
        level += rng.gauss(0.0, step_sd)
        factor = math.exp(level)
        if episode and episode[0] <= t < episode[1]:
            factor *= episode[2]
        series.append(factor)
    return tuple(series)


def make_trial(rng: random.Random) -> Trial:
    """A random trial: 2-4 candidates, noise from quiet to noisy."""
    k = rng.randint(2, 4)
    base_ms = math.exp(rng.uniform(math.log(0.2), math.log(20.0)))
    true_ms = (base_ms, *(base_ms / speedup_draw(rng) for _ in range(k)))
    sigma = rng.uniform(0.02, 0.12)
    jitter = tuple(sigma * rng.uniform(0.7, 1.3) for _ in true_ms)
    length = 4 * (WARMUP + TIMED) * len(true_ms)
    return Trial(true_ms, jitter, rng.uniform(0.0, 0.03), ambient_series(rng, length))


class Machine:
    """Times calls of a trial's backends on its timeline; the clock is the call count."""

    def __init__(self, trial: Trial, rng: random.Random) -> None:
        self.trial = trial
        self.rng = rng
        self.t = 0
        self.timed = 0

    def call(self, backend: int, *, timed: bool) -> float:
        """One call's latency in ms; advances the clock."""
        tr = self.trial
        ambient = tr.ambient[min(self.t, len(tr.ambient) - 1)]
        ms = tr.true_ms[backend] * ambient * math.exp(self.rng.gauss(0.0, tr.jitter[backend]))
        if self.rng.random() < tr.outlier_p:
            ms *= self.rng.uniform(2.0, 6.0)
        self.t += 1
        self.timed += int(timed)
        return ms

    def sequential(self, backend: int, timed: int) -> list[float]:
        """Warm-up then ``timed`` calls of one backend."""
        for _ in range(WARMUP):
            self.call(backend, timed=False)
        return [self.call(backend, timed=True) for _ in range(timed)]


# --------------------------------------------------------------------------- the methods
def _chosen(strategy: Strategy, profiles: Sequence[Profile]) -> int:
    outcome = tune(strategy, [Success(p) for p in profiles[1:]], Success(profiles[0]))
    return NAMES.index(outcome.unwrap().backend)


def sequential_profiles(trial: Trial, rng: random.Random) -> list[Profile]:
    """Each backend in turn: 10 warm-up + 20 timed calls (the reference's schedule)."""
    machine = Machine(trial, rng)
    return [Profile(NAMES[i], {1: machine.sequential(i, TIMED)}) for i in range(len(trial.true_ms))]


def ours(
    trial: Trial,
    rng: random.Random,
    strategy: Strategy,
    plan: RoundsPlan,
    *,
    cap: float = OURS_CAP,
    sweep_timed: int | None = None,
    spent: list[int] | None = None,
    verify_rounds: int = 0,
) -> int:
    """Short sweep, then adaptive interleaved rounds among contenders.

    At most ``cap`` times the reference's timed calls; ``spent`` collects the calls used.
    With ``verify_rounds`` the pick is then verified (:func:`verify_on_machine`), its
    calls counted on top of the cap.
    """
    n = len(trial.true_ms)
    budget = int(cap * TIMED * n)
    machine = Machine(trial, rng)
    timed = strategy.plan.call_rule.max_samples if sweep_timed is None else sweep_timed
    swept = [Profile(NAMES[i], {1: machine.sequential(i, timed)}) for i in range(n)]
    try:
        final = _rounds(trial, machine, strategy, plan, swept, budget)
        choice = _chosen(strategy, final)
        if verify_rounds:
            choice = verify_on_machine(machine, strategy, final, choice, verify_rounds)
        return choice
    finally:
        if spent is not None:
            spent.append(machine.timed)


def _rounds(
    trial: Trial,
    machine: Machine,
    strategy: Strategy,
    plan: RoundsPlan,
    swept: list[Profile],
    budget: int,
) -> list[Profile]:
    """The profiles the decision is taken on: the sweeps, with round samples when run."""
    state = fold_all(strategy, [Success(p) for p in swept[1:]], Success(swept[0]))
    joined = round_members(strategy, state, plan)
    members = (*((0,) if joined.baseline else ()), *(NAMES.index(c) for c in joined.candidates))
    if len(members) < 2:
        return swept
    swept_calls = machine.t  # the clock is the call count: the sweeps' "wall time"
    share = math.inf if plan.sweep_share is None else plan.sweep_share * swept_calls
    index = {name: NAMES.index(name) for name in NAMES[: len(swept)]}

    def warm(name: str) -> bool:
        for _ in range(plan.warmup_calls + 1):  # priming, then warm-up
            machine.call(index[name], timed=False)
        return True

    def judge(
        so_far: Mapping[str, Sequence[float]], done: int, _elapsed: float, still: tuple[str, ...]
    ) -> RoundsVerdict:
        with_rounds = _with_rounds(swept, so_far)
        return judge_rounds(
            strategy,
            with_rounds[0],
            [with_rounds[index[c]] for c in joined.candidates],
            done,
            float(machine.timed),
            plan,
            still_timed=still,
        )

    def affordable(order: tuple[str, ...]) -> bool:
        calls = len(order)
        return machine.timed + calls <= budget and machine.t - swept_calls + calls <= share

    timed = interleave(
        [NAMES[i] for i in members],
        warm,
        lambda name, _round: machine.call(index[name], timed=True),
        judge,
        plan,
        clock=lambda: float(machine.t),
        affordable=affordable,
    )
    return _with_rounds(swept, timed.samples)


VERIFY_LOOKS = (6, 8, 10, 13, 16, 20, 25, 30, 36)
BURST_CALLS = 3


def verify_on_machine(
    machine: Machine, strategy: Strategy, final: Sequence[Profile], choice: int, rounds: int
) -> int:
    """The CLI's verification on the simulated machine: the pick against its two closest
    runner-ups (the second while the sweeps leave it within 1.25×), in rotated rounds of
    3-call bursts (their median is the round's sample), judged as it goes; it stops when the
    pick is clear or settled, else after ``rounds`` rounds (the asked budget), extended to
    ``EXTEND`` times that while a challenger leans beyond the margin."""
    selection = tune(strategy, [Success(p) for p in final[1:]], Success(final[0])).unwrap()
    names = unsettled(strategy, selection, challengers(strategy, selection, CHALLENGERS))
    who = [choice, *(NAMES.index(n) for n in names)]
    samples: dict[int, list[float]] = {i: [] for i in who}
    verdict = None
    for r in range(int(rounds * EXTEND)):
        for name in rotation(tuple(NAMES[i] for i in who), r):
            i = NAMES.index(name)
            machine.call(i, timed=False)  # settling
            burst = sorted(machine.call(i, timed=True) for _ in range(BURST_CALLS))
            samples[i].append(burst[BURST_CALLS // 2])
        done = r + 1
        if done < VERIFY_LOOKS[0] or (done not in VERIFY_LOOKS and done % 6):
            continue
        paired = {i: Paired(NAMES[i], 1, tuple(samples[i])) for i in who}
        verdict = judge(paired[choice], [paired[i] for i in who[1:]], "latency", seconds=done)
        if verdict.outcome in ("clear", "settled"):
            break
        if done >= rounds and verdict.outcome != "leaning":
            break
    return choice if verdict is None else NAMES.index(verdict.selected)


def _with_rounds(swept: Sequence[Profile], rounds: Mapping[str, Sequence[float]]) -> list[Profile]:
    """The swept profiles, those with round samples carrying them at batch size 1."""
    return [
        replace(p, rounds_ms={1: rounds[p.backend]}) if rounds.get(p.backend) else p for p in swept
    ]


# --------------------------------------------------------------------------- the scoring
@dataclass
class Score:
    """Regrets of one method over the trials, and its timed calls per trial (share of ref)."""

    name: str
    regrets: list[float]
    calls: list[float]

    def wrong(self, zone: float) -> float:
        """Share of trials whose regret exceeds ``zone``."""
        return sum(r > zone + 1e-12 for r in self.regrets) / len(self.regrets)

    def p95(self) -> float:
        """95th percentile of the regret."""
        ordered = sorted(self.regrets)
        return ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]


def regret(trial: Trial, choice: int) -> float:
    """How much slower the choice truly is than the truly fastest backend."""
    return trial.true_ms[choice] / min(trial.true_ms) - 1.0


Method = Callable[[Trial, random.Random, list[int]], int]


def methods() -> dict[str, Method]:
    """The compared methods; each appends the timed calls it used to its last argument."""
    strategy = confident(min_latency)
    plan = RoundsPlan(max_rounds=10_000, max_seconds=1e18)  # the call budget binds instead

    def reference(trial: Trial, rng: random.Random, spent: list[int]) -> int:
        spent.append(TIMED * len(trial.true_ms))
        return _chosen(min_latency, sequential_profiles(trial, rng))

    def confident_seq(trial: Trial, rng: random.Random, spent: list[int]) -> int:
        spent.append(TIMED * len(trial.true_ms))
        return _chosen(strategy, sequential_profiles(trial, rng))

    def ours_capped(cap: float, verify: int = 0) -> Method:
        return lambda trial, rng, spent: ours(
            trial, rng, strategy, plan, cap=cap, spent=spent, verify_rounds=verify
        )

    return {
        "reference": reference,
        "confident-seq": confident_seq,
        "ours": ours_capped(OURS_CAP),
        "ours-strict": ours_capped(1.0),
        "ours+verify": ours_capped(OURS_CAP, VERIFY_ROUNDS),
    }


def run_synthetic(trials: int, seed: int) -> dict[str, Score]:
    """Every method on the same ``trials`` trials (same truths, same machine timeline)."""
    compared = methods()
    scores = {name: Score(name, [], []) for name in compared}
    master = random.Random(seed)
    for _ in range(trials):
        trial = make_trial(random.Random(master.getrandbits(64)))
        noise_seed = master.getrandbits(64)
        budget = TIMED * len(trial.true_ms)
        for name, method in compared.items():
            spent: list[int] = []
            choice = method(trial, random.Random(noise_seed), spent)
            scores[name].regrets.append(regret(trial, choice))
            scores[name].calls.append(spent[0] / budget)
    return scores


def print_synthetic(scores: dict[str, Score], trials: int, seconds: float) -> None:
    """The side-by-side table and the closing line."""
    print(f"synthetic decision quality: {trials} trials, {seconds:.1f} s")
    print(
        f"  wrong = regret > {INDIFFERENCE:.0%}; w0/w1/w2 = regret > 0/1/2 %; "
        "calls = timed calls per tune / reference's (mean, max)"
    )
    print(
        f"  {'method':<14}{'wrong':>7}{'w0':>7}{'w1':>7}{'w2':>7}"
        f"{'regret mean':>13}{'p95':>7}{'max':>8}{'calls':>13}"
    )
    for s in scores.values():
        print(
            f"  {s.name:<14}{s.wrong(INDIFFERENCE):>7.1%}{s.wrong(0.0):>7.1%}"
            f"{s.wrong(0.01):>7.1%}{s.wrong(0.02):>7.1%}"
            f"{statistics.fmean(s.regrets):>13.2%}{s.p95():>7.1%}{max(s.regrets):>8.1%}"
            f"{statistics.fmean(s.calls):>8.2f}, {max(s.calls):.1f}"
        )
    ref, our = scores["reference"], scores["ours"]
    ver = scores["ours+verify"]
    print(
        f"synthetic: reference_wrong={ref.wrong(INDIFFERENCE) * 100:.1f}% "
        f"ours_wrong={our.wrong(INDIFFERENCE) * 100:.1f}% "
        f"ours_regret_mean={statistics.fmean(our.regrets) * 100:.2f}% "
        f"verified_wrong={ver.wrong(INDIFFERENCE) * 100:.1f}% "
        f"verified_w2={ver.wrong(0.02) * 100:.1f}% "
        f"verified_true_best={sum(r <= 0.0 for r in ver.regrets)}/{len(ver.regrets)}"
    )


# --------------------------------------------------------------------------- real CPU
NEIGHBOUR = (
    "import torch\n"
    "torch.set_num_threads(1)\n"
    "a = torch.randn(384, 384)\n"
    "while True:\n"
    "    a = torch.tanh(a @ a)\n"
)


@dataclass
class RealScore:
    """Regrets, measuring wall times and round counts of one rule under one condition."""

    regrets: list[float]
    seconds: list[float]
    rounds: list[int]


def _percent(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def run_real(
    models: Sequence[str],
    repeats: int,
    truth_rounds: int,
    work: str,
    candidates: Sequence[str] = ("inductor", "onnxruntime"),
    trimmed_rounds: bool = False,
    handicap_us: float = 0.0,
) -> None:
    """Tune the embedded models on CPU with both rules, quiet and with a noisy neighbour.

    Backends are built once per model (builds are the same for both rules); under each
    condition the ground truth is a long interleaved run, then each tune measures (sweep,
    and for ours the final rounds) and decides; its wall time covers exactly that.
    """
    import subprocess
    from pathlib import Path

    import torch

    from aitune_fp.core.fold import finish
    from aitune_fp.core.measure.stop_rules import never_stop
    from aitune_fp.effects.backends.base import Backend
    from aitune_fp.effects.backends.eager import TorchEager
    from aitune_fp.effects.backends.inductor import InductorJIT
    from aitune_fp.effects.backends.ort import OnnxRuntime
    from aitune_fp.effects.inputs.samples import normalise_samples
    from aitune_fp.effects.measure.profiler import SweepPlan, profile_runner
    from aitune_fp.effects.measure.timing import ProfileSettings
    from aitune_fp.models import DEMO_MODELS
    from aitune_fp.shell.io import perform
    from aitune_fp.shell.standalone_rounds import AfterSweeps, final_rounds

    device = torch.device("cpu")
    settings = ProfileSettings()
    ours_strategy = confident(min_latency)
    rules = {"reference": min_latency, "ours": ours_strategy}
    if trimmed_rounds:  # the same rule judging rounds by the trimmed mean, side by side
        rules["ours-trimmed"] = confident(min_latency, paired_statistic="trimmed")
    totals: dict[tuple[str, ...], RealScore] = {}
    for model_name in models:
        demo = DEMO_MODELS[model_name]
        module, samples = demo.build(), normalise_samples(demo.samples())
        known: dict[str, Backend] = {
            "inductor": InductorJIT(),
            "onnxruntime": OnnxRuntime(),
            "eager-copy": TorchEager(),
        }
        configs: dict[str, Backend] = {"eager": TorchEager(), **{n: known[n] for n in candidates}}
        runners: dict[str, Callable[..., object]] = {}
        build_began = time.perf_counter()
        for name, config in configs.items():
            built = perform(config.build(module, samples, device, Path(work) / name))
            runners[name] = built.unwrap().runner
        if handicap_us > 0:  # a known true gap: the baseline spins this long after each call
            runners["eager"] = partial(_handicapped, runners["eager"], handicap_us * 1e-6)
        build_s = time.perf_counter() - build_began
        print(f"real {model_name}: builds took {build_s:.1f} s (once, shared by both rules)")
        names = tuple(runners)
        for condition in ("quiet", "noisy"):
            neighbour = (
                subprocess.Popen([sys.executable, "-c", NEIGHBOUR])
                if condition == "noisy"
                else None
            )
            try:
                truth = _ground_truth(runners, samples, settings, truth_rounds)
                best = min(truth.values())
                print(
                    f"real {model_name} ({condition}): truth = median ms over {truth_rounds} "
                    "interleaved rounds: " + ", ".join(f"{n} {truth[n]:.4f}" for n in names),
                    flush=True,
                )
                for rep in range(repeats):
                    order = list(rules) if rep % 2 == 0 else list(reversed(rules))
                    for rule_name in order:
                        strategy = rules[rule_name]
                        began = time.perf_counter()
                        profiles: list[Profile] = [
                            perform(
                                profile_runner(
                                    n,
                                    runners[n],
                                    samples,
                                    device,
                                    SweepPlan([1], strategy.plan.call_rule, never_stop()),
                                    settings,
                                )
                            ).unwrap()
                            for n in names
                        ]
                        swept_s = time.perf_counter() - began
                        fed = [Success(p) for p in profiles[1:]]
                        state = fold_all(strategy, fed, Success(profiles[0]))
                        state, rounds = final_rounds(
                            AfterSweeps(strategy, state, profiles[0], fed, swept_s),
                            runners,
                            samples,
                            device,
                            settings,
                        )
                        chosen = finish(strategy, state).unwrap().backend
                        seconds = time.perf_counter() - began
                        for key in ((rule_name, condition), (rule_name, condition, model_name)):
                            score = totals.setdefault(key, RealScore([], [], []))
                            score.regrets.append(truth[chosen] / best - 1.0)
                            score.seconds.append(seconds)
                            score.rounds.append(rounds.rounds if rounds else 0)
            finally:
                if neighbour is not None:
                    neighbour.kill()
                    neighbour.wait()
    _print_real(totals, len(models) * repeats)


def _handicapped(
    runner: Callable[..., object], seconds: float, *args: object, **kwargs: object
) -> object:
    """``runner``'s result, returned after spinning ``seconds`` more (a known slowdown)."""
    out = runner(*args, **kwargs)
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass
    return out


def _ground_truth(
    runners: dict[str, Callable[..., object]],
    samples: object,
    settings: object,
    rounds: int,
) -> dict[str, float]:
    """Median latency per backend over a long interleaved run (rotated order per round)."""
    import torch

    from aitune_fp.effects.measure.timing import call_timer, call_with, input_pool

    device = torch.device("cpu")
    timer = call_timer(device, settings)  # type: ignore[arg-type]
    calls = {
        n: [
            partial(call_with, r, b.args, dict(b.kwargs))
            for b in input_pool(samples, 1, device, settings)  # type: ignore[arg-type]
        ]
        for n, r in runners.items()
    }
    timed: dict[str, list[float]] = {n: [] for n in runners}
    names = tuple(runners)
    with torch.inference_mode():
        for n in names:
            for i in range(20):
                calls[n][i % len(calls[n])]()
        for r in range(rounds):
            for n in rotation(names, r):
                timed[n].append(timer(calls[n][r % len(calls[n])]))
    return {n: statistics.median(v) for n, v in timed.items()}


def _print_real(totals: dict[tuple[str, ...], RealScore], tunes: int) -> None:
    print(f"real CPU decision quality: {tunes} tunes per rule and condition")
    print(
        f"  {'rule':<10}{'condition':<10}{'model':<12}{'regret p50':>11}{'p95':>8}{'max':>8}"
        f"{'wall median':>13}{'rounds':>8}{'tunes with rounds':>19}"
    )
    for key, score in sorted(totals.items(), key=lambda kv: (len(kv[0]), kv[0])):
        model = key[2] if len(key) > 2 else "all"
        print(
            f"  {key[0]:<10}{key[1]:<10}{model:<12}{_percent(score.regrets, 0.5):>11.2%}"
            f"{_percent(score.regrets, 0.95):>8.2%}{max(score.regrets):>8.2%}"
            f"{statistics.median(score.seconds):>12.3f}s{statistics.median(score.rounds):>8g}"
            f"{sum(r > 0 for r in score.rounds) / len(score.rounds):>19.0%}"
        )
    models = sorted({key[2] for key in totals if len(key) > 2})
    print("  median wall ours / reference, per model:")
    for condition in ("quiet", "noisy"):
        ratios = [_wall_ratio(totals, condition, m) for m in models]
        print(
            f"    {condition}: "
            + ", ".join(f"{m} {r:.2f}" for m, r in zip(models, ratios, strict=True))
        )
    parts = []
    for condition in ("quiet", "noisy"):
        ours, ref = totals[("ours", condition)], totals[("reference", condition)]
        worst = max(_wall_ratio(totals, condition, m) for m in models)
        parts.append(
            f"{condition}: ours_p95={_percent(ours.regrets, 0.95) * 100:.1f}% "
            f"ref_p95={_percent(ref.regrets, 0.95) * 100:.1f}% "
            f"wall_ratio={_wall_ratio(totals, condition):.2f} (worst model {worst:.2f})"
        )
    print("real: " + "; ".join(parts))


def _wall_ratio(
    totals: dict[tuple[str, ...], RealScore], condition: str, model: str | None = None
) -> float:
    """Median tune wall time of ours over the reference's (all models pooled, or one)."""
    tail = (condition,) if model is None else (condition, model)
    ours, ref = totals[("ours", *tail)], totals[("reference", *tail)]
    return statistics.median(ours.seconds) / statistics.median(ref.seconds)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the synthetic comparison (and the real one unless ``--quick``); ``--real``: the
    tunes' own artifacts re-measured (:mod:`decision_real`, its options after ``--real``)."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    if "--real" in args_list:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import decision_real

        args_list.remove("--real")
        return decision_real.main(args_list)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="synthetic comparison only")
    parser.add_argument("--trials", type=int, default=300)
    parser.add_argument("--race-trials", type=int, default=200, help="raced/unraced rows")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--models", default="mlp,cnn,transformer")
    parser.add_argument(
        "--candidates",
        default="inductor,onnxruntime",
        help="candidates beside the eager baseline (inductor, onnxruntime, eager-copy); "
        "'inductor' alone on the mlp is a near tie, the costly case for rounds",
    )
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument(
        "--handicap-us",
        type=float,
        default=0.0,
        help="slow the eager baseline by spinning this many µs after each call; with "
        "--candidates eager-copy this makes a close case whose gap is known",
    )
    parser.add_argument(
        "--trimmed-rounds",
        action="store_true",
        help="also run ours with rounds judged by the trimmed mean (rule 'ours-trimmed')",
    )
    parser.add_argument("--truth-rounds", type=int, default=300)
    parser.add_argument("--work", default="/tmp/aitune_fp_decision_quality")
    args = parser.parse_args(argv)
    if not args.quick:
        models = [m for m in args.models.split(",") if m]
        chosen = [c for c in args.candidates.split(",") if c]
        run_real(
            models,
            args.repeats,
            args.truth_rounds,
            args.work,
            chosen,
            args.trimmed_rounds,
            args.handicap_us,
        )
    began = time.perf_counter()
    scores = run_synthetic(args.trials, args.seed)
    print_synthetic(scores, args.trials, time.perf_counter() - began)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import decision_race

    raced = decision_race.run_raced(args.race_trials, args.seed)
    decision_race.print_raced(raced, args.race_trials)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
