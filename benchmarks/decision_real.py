"""Real-model decision quality: does a tune pick the true best of its own candidates?

``python benchmarks/decision_quality.py --real`` (or this file) tunes the demo models on
CPU under each strategy (``confident`` over max-throughput, min-latency and a 5 ms latency
budget, which binds on these models) twice, side by side in one run:

- ``before``: the settings before issue 16: a fixed 10-call warm-up
  (``ProfileSettings(warmup=None)``), no re-measured first point, no verification, batch
  sizes judged by their mean (``confident(..., robust_batches=False)``), final rounds of
  one call per participant (``RoundsPlan(burst=Burst())``);
- ``after``: the defaults (warm-up to steady state, first point re-measured, rounds of
  10 ms bursts) and a verification of ``--verify-seconds`` (3 s, the CLI default), which
  also re-measures the winner at its neighbouring batch sizes under throughput.

Each tune keeps its own built runners (every candidate's, the baseline's: the driver's
release is held back for the benchmark). After both tunes of a (model, strategy), each
tune's runners are re-measured at every batch size its sweep profiled, in an interleaved
window of ``--window-seconds`` per tune (its own runners only; warmed to steady state
first, order rotated per round). Each participant's turn is a long burst
(:mod:`aitune_fp.core.rounds.burst`): 30 ms of rest, at least 5 calls and 50 ms of
settling, then at least 5 calls and ``--burst-ms`` (100 ms) timed, whose median is its
round's sample. The bursts matter. Timed one call at a time among runners of three
runtimes, nobody runs at the speed it has alone. An ONNX Runtime session never settles
(the demo CNN at batch size 1: 0.28 ms interleaved, 0.156 ms alone). AOTInductor right
after ONNX Runtime's spinning threads takes 37 ms for a 4.2 ms call (the transformer at
batch size 32). A deployment runs one backend alone. Two sessions of the same ONNX model in
one process also differ by up to 8 %, which is why each tune is judged on its own
runners. The *truth* per (tune, backend, batch size) is the median of its round samples;
the best of a tune is the best of its own candidates under the strategy (min latency at
batch size 1; max samples/s; max samples/s with median latency within the budget); the
*regret* of a pick is how much worse its truth is than that best (a cost ratio minus 1),
and a pick is *the true best* when its regret is at most ``--noise`` (2 %). It is also
counted as *not significantly worse* than the best when the 95 % paired bootstrap interval
of its per-round cost over the best's reaches down to 1 (the window cannot tell them apart:
on a throughput plateau, batch sizes 1 to 3 % apart).

Prints per tune the pick and its regret (marked when significant), then per setting the
true-best and not-significantly-worse counts, the regret p50/p95/max, and the median tune
time (wall time less the builds and validation, which the artifact cache makes a model's
first tune pay alone). Figures from a shared, noisy machine are noisy: read the ratios
measured side by side, not the absolute times.
"""

from __future__ import annotations

import argparse
import logging
import math
import statistics
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STRATEGIES = ("max-throughput", "min-latency", "latency-budget")


@dataclass(frozen=True)
class Tuned:
    """One tune: its setting, pick, wall time less builds and validation (the builds are
    cached after a model's first tune), final-rounds and verification lines, and profiled
    pairs."""

    setting: str
    pick: tuple[str, int]
    seconds: float
    verification: str
    pairs: tuple[tuple[str, int], ...]


@contextmanager
def keeping(sink: dict[str, Any]) -> Iterator[None]:
    """Hold back the driver's release of runners; ``sink`` gets every built runner by name."""
    from pyrsistent import pmap

    import aitune_fp.shell.drive as drive
    from aitune_fp.shell import building

    makers, close = (building.in_process, building.isolated), drive.close_all_but

    def keeping_runner(make: Any) -> Any:
        def kept(setup: Any, done: int, backend: Any, name: str, early: Any = None) -> Any:
            run = make(setup, done, backend, name, early)
            if run.built is not None:
                sink[name] = run.built
            return run

        return kept

    building.in_process, building.isolated = (keeping_runner(m) for m in makers)
    drive.close_all_but = lambda live, keep: pmap({n: b for n, b in live.items() if n in keep})
    try:
        yield
    finally:
        (building.in_process, building.isolated), drive.close_all_but = makers, close


def strategy_of(name: str, budget_ms: float, setting: str = "after") -> Any:
    """The confident strategy named (the CLI's default kind of decision); ``before``
    judges batch sizes by the mean, as it did before the robust sweeps."""
    from aitune_fp.core.rounds.burst import Burst
    from aitune_fp.core.rounds.rounds_plan import RoundsPlan
    from aitune_fp.core.strategies import confident, latency_budget, max_throughput, min_latency

    plain = {
        "max-throughput": max_throughput,
        "min-latency": min_latency,
        "latency-budget": latency_budget(budget_ms),
    }[name]
    if setting == "before":
        return confident(plain, robust_batches=False, rounds=RoundsPlan(burst=Burst()))
    return confident(plain)


def tune_once(
    model: str, strategy: Any, setting: str, backends: Sequence[str], verify: float, work: Path
) -> tuple[Tuned, dict[str, Any]]:
    """Tune ``model`` under ``setting``; the tune and its kept runners by backend."""
    from aitune_fp.effects.measure.timing import ProfileSettings
    from aitune_fp.models import DEMO_MODELS
    from aitune_fp.shell.io import perform
    from aitune_fp.shell.tune_module import TuneOptions, run_tuning

    demo = DEMO_MODELS[model]
    if setting == "before":
        settings, seconds = ProfileSettings(warmup=None, remeasure_first=False), None
    else:
        settings, seconds = ProfileSettings(), verify
    kept: dict[str, Any] = {}
    began = time.perf_counter()
    with keeping(kept):
        run = perform(
            run_tuning(
                demo.build(),
                demo.samples(),
                strategy,
                list(backends),
                TuneOptions(
                    device="cpu",
                    cache_dir=work,
                    settings=settings,
                    verify_seconds=seconds,
                    model_name=model,
                    isolation=False,  # the runners are kept and re-measured in this process
                ),
            )
        ).unwrap()
    took = time.perf_counter() - began
    record = run.record
    sel = record.selection
    pick = (sel.backend, sel.result.selected_batch_size) if sel else ("none", 0)
    pairs = tuple(
        (o.backend, bs)
        for o in record.outcomes
        if o.profile is not None and o.backend in kept
        for bs in o.profile.batch_sizes
    )
    lines = [n for n in (sel.notes if sel else ()) if n.startswith(("final rounds", "no final"))]
    if record.verification:
        lines.append(record.verification.reason)
    line = "\n".join(lines)
    built = sum(o.stage_seconds.get(k, 0.0) for o in record.outcomes for k in ("build", "validate"))
    return Tuned(setting, pick, took - built, line, pairs), kept


def window(
    tuned: Tuned, kept: dict[str, Any], samples: Any, seconds: float, burst_ms: float
) -> dict[tuple[str, int], tuple[float, ...]]:
    """The tune's profiled (backend, batch size) pairs timed with its own runners in one
    interleaved window of ``burst_ms`` bursts: the round samples (ms per call) by pair."""
    from dataclasses import replace

    import torch

    from aitune_fp.core.rounds.burst import Burst
    from aitune_fp.core.verification.verification_plan import timing_plan, timing_verdict
    from aitune_fp.effects.measure.rounds import time_paired
    from aitune_fp.effects.measure.timing import ProfileSettings

    pairs = {f"{backend}|{bs}": (backend, bs) for backend, bs in tuned.pairs}
    participants = [(name, kept[b].runner, bs) for name, (b, bs) in pairs.items()]
    long = Burst(min_ms=burst_ms, min_calls=5, settle_calls=5, settle_ms=50.0, rest_ms=30.0)
    plan = replace(timing_plan(seconds), burst=long)
    timed = time_paired(
        participants,
        samples,
        torch.device("cpu"),
        plan,
        lambda _samples, done, elapsed, still: timing_verdict(plan, done, elapsed, still),
        ProfileSettings(max_pool=8),
    ).samples
    return {pair: tuple(timed[n]) for n, pair in pairs.items() if timed.get(n)}


def not_worse(
    strategy_name: str, pick: tuple[str, int], best: tuple[str, int], rounds: dict[Any, Any]
) -> bool:
    """Whether the window cannot tell the pick from the best: the 95 % paired bootstrap
    interval of the pick's per-round cost over the best's reaches down to 1."""
    from aitune_fp.core.stats.bootstrap import ratio_interval

    if pick == best:
        return True
    if pick not in rounds or best not in rounds:
        return False

    def cost(pair: tuple[str, int]) -> list[float]:
        scale = 1.0 if strategy_name == "min-latency" else float(pair[1])
        return [ms / scale for ms in rounds[pair]]

    a, b = cost(pick), cost(best)
    n = min(len(a), len(b))
    if n < 3:
        return False
    ci = ratio_interval(a[:n], b[:n], statistic="median", key=16, paired=True)
    return ci.low <= 1.0


def truth_of(
    strategy_name: str, budget_ms: float, times: dict[tuple[str, int], float]
) -> dict[tuple[str, int], float]:
    """Each pair's true cost under the strategy (lower is better; inf: outside the budget)."""
    out = {}
    for (backend, bs), ms in times.items():
        if strategy_name == "min-latency":
            out[(backend, bs)] = ms if bs == 1 else math.inf
        elif strategy_name == "latency-budget" and ms > budget_ms:
            out[(backend, bs)] = math.inf
        else:
            out[(backend, bs)] = ms / bs
    return out


def percent(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (nearest rank) of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def run(args: argparse.Namespace) -> int:
    """Tune, re-measure, print."""
    from aitune_fp.effects.inputs.samples import normalise_samples
    from aitune_fp.models import DEMO_MODELS

    logging.getLogger("aitune_fp").addHandler(logging.NullHandler())
    work = Path(args.work or tempfile.mkdtemp(prefix="aitune_fp_decision_real_"))
    regrets: dict[str, list[float]] = {"before": [], "after": []}
    walls: dict[str, list[float]] = {"before": [], "after": []}
    ties: dict[str, list[bool]] = {"before": [], "after": []}
    began = time.perf_counter()
    for model in args.models.split(","):
        samples = normalise_samples(DEMO_MODELS[model].samples())
        for name in args.strategies.split(","):
            tunes = []
            for setting in args.settings.split(","):
                tunes.append(
                    tune_once(
                        model,
                        strategy_of(name, args.budget_ms, setting),
                        setting,
                        args.backends.split(","),
                        args.verify_seconds,
                        work / model,
                    )
                )
            for tuned, kept in tunes:
                rounds = window(tuned, kept, samples, args.window_seconds, args.burst_ms)
                own = {pair: statistics.median(timed) for pair, timed in rounds.items()}
                costs = truth_of(name, args.budget_ms, own)
                best = min(costs.values())
                got = costs.get(tuned.pick, math.inf)
                regret = got / best - 1.0 if math.isfinite(got) else math.inf
                regrets[tuned.setting].append(regret)
                walls[tuned.setting].append(tuned.seconds)
                true_best = min(costs, key=lambda k: costs[k])
                tied = math.isfinite(got) and not_worse(name, tuned.pick, true_best, rounds)
                ties[tuned.setting].append(tied)
                print(
                    f"{model:<12}{name:<16}{tuned.setting:<8} pick {tuned.pick[0]}@{tuned.pick[1]}"
                    f"  best {true_best[0]}@{true_best[1]}  regret {regret:.1%}"
                    f"{'' if tied else ' (significant)'}  measuring {tuned.seconds:.1f} s",
                    flush=True,
                )
                for said in tuned.verification.splitlines():
                    print(f"{'':<36}{said}", flush=True)
                for built in kept.values():
                    built.close()
    print(
        f"decision quality on the tunes' own artifacts ({args.window_seconds:g} s windows, "
        f"{time.perf_counter() - began:.0f} s in all; shared machine, noisy):"
    )
    for setting in args.settings.split(","):
        r = regrets[setting]
        good = sum(x <= args.noise for x in r)
        same = sum(ties[setting])
        print(
            f"  {setting:<7} true best (regret <= {args.noise:.0%}) {good}/{len(r)}, not "
            f"significantly worse than it {same}/{len(r)}  regret "
            f"p50 {percent(r, 0.5):.1%} p95 {percent(r, 0.95):.1%} max {max(r):.1%}  "
            f"median measuring {statistics.median(walls[setting]):.1f} s"
        )
    if walls["after"] and walls["before"]:
        ratio = statistics.median(walls["after"]) / statistics.median(walls["before"])
        print(f"  measuring time after / before (medians): {ratio:.2f}")
    return 0


def parser() -> argparse.ArgumentParser:
    """The options of the real benchmark."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="mlp,cnn,transformer")
    p.add_argument("--strategies", default=",".join(STRATEGIES))
    p.add_argument(
        "--backends",
        default="aot_inductor,onnxruntime",
        help="candidates beside the eager baseline (default: the issue's pair)",
    )
    p.add_argument("--budget-ms", type=float, default=5.0)
    p.add_argument("--verify-seconds", type=float, default=3.0)
    p.add_argument(
        "--window-seconds",
        type=float,
        default=10.0,
        help="the interleaved re-measurement of each tune's runners; the issue's: 60",
    )
    p.add_argument(
        "--burst-ms",
        type=float,
        default=100.0,
        help="each participant's timed calls in a window round (ms, after its settling)",
    )
    p.add_argument("--noise", type=float, default=0.02)
    p.add_argument(
        "--settings",
        default="before,after",
        help="which settings to tune under ('after' alone: the shipped decision, e.g. to "
        "compare two versions of the library run one after the other)",
    )
    p.add_argument("--work", default=None, help="build and cache folder (default: a temp dir)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Parse and run."""
    return run(parser().parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
