"""The warm-up rule's false-stop rate and cost on the synthetic noise model.

Prints figures; no pass/fail. Each stream is one backend of a trial of
``benchmarks/decision_quality.py`` (its true latency, per-call log-normal jitter, rare large
outliers, the machine's slow drift and noisy-neighbour episodes), with a warm-up phase laid
on top of its first calls:

- ``none``: no warm-up phase (AOTInductor): every stop is right, only the cost counts;
- ``ort``: the ONNX Runtime pattern: 30–45 % slower (with outliers in 1 call in 10) for a
  plateau, then a linear decay; steady after 30–60 calls; ``ort-fast``: the same at
  0.1–0.5 ms per call (the measured case: a fresh session at batch size 1, 0.145 ms);
- ``jit``: a fast exponential decay (lazy kernels, caches): ``1 + A exp(-t / tau)``,
  ``A`` in 0.5–3, ``tau`` in 1–8 calls;
- ``clock``: a decay in time, not calls (a CPU clock ramping up): ``1 + A exp(-s / tau)``,
  ``A`` in 0.1–0.5, ``tau`` in 5–50 ms of warm-up.

A *false stop* leaves the warm-up while the next call is still truly more than 2 % slower
than the steady state (so the timed calls would include warm-up); ``>5 %`` is the share
still more than 5 % slow. ``calls`` is the warm-up calls used (mean, p95), ``ms`` the
simulated warm-up time (mean), ``capped`` the share of streams stopped at a cap (the call
or time cap) rather than as stable. Priming calls are not counted (the profiler makes one
before the warm-up, for every rule alike).

    python benchmarks/warmup_rule.py [--streams 2000] [--seed 1]
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from decision_quality import make_trial

from aitune_fp.core.measure.warmup import WarmupCall, WarmupRule, fixed_warmup

FALSE_STOP = 0.02
CALL_OVERHEAD_S = 20e-6
Overlay = Callable[[int, float], float]  # (call index, seconds so far) -> slowdown factor


@dataclass(frozen=True)
class Stream:
    """One backend's calls: its noise and its warm-up overlay."""

    true_ms: float
    jitter: float
    outlier_p: float
    ambient: tuple[float, ...]
    overlay: Overlay
    warm_outliers: int  # calls during which outliers are 10x more frequent


def no_overlay(_t: int, _s: float) -> float:
    """No warm-up phase."""
    return 1.0


def ort_overlay(rng: random.Random) -> tuple[Overlay, int]:
    """Slow plateau then a linear decay, steady after 30-60 calls."""
    settle = rng.randint(30, 60)
    plateau = rng.randint(settle // 3, (2 * settle) // 3)
    slow = rng.uniform(1.30, 1.45)

    def overlay(t: int, _s: float) -> float:
        if t < plateau:
            return slow
        if t < settle:
            return slow - (slow - 1.0) * (t - plateau) / (settle - plateau)
        return 1.0

    return overlay, settle


def jit_overlay(rng: random.Random) -> Overlay:
    """A fast exponential decay in calls."""
    amp, tau = rng.uniform(0.5, 3.0), rng.uniform(1.0, 8.0)
    return lambda t, _s: 1.0 + amp * math.exp(-t / tau)


def clock_overlay(rng: random.Random) -> Overlay:
    """An exponential decay in seconds of warm-up (a clock ramp)."""
    amp, tau = rng.uniform(0.1, 0.5), rng.uniform(0.005, 0.05)
    return lambda _t, s: 1.0 + amp * math.exp(-s / tau)


PATTERNS = ("none", "ort", "ort-fast", "jit", "clock")


def make_stream(rng: random.Random, pattern: str) -> Stream:
    """One backend of a synthetic trial with ``pattern`` laid over its first calls."""
    trial = make_trial(rng)
    i = rng.randrange(len(trial.true_ms))
    overlay: Overlay = no_overlay
    warm = 0
    if pattern in ("ort", "ort-fast"):
        overlay, warm = ort_overlay(rng)
    elif pattern == "jit":
        overlay = jit_overlay(rng)
    elif pattern == "clock":
        overlay = clock_overlay(rng)
    true_ms = rng.uniform(0.1, 0.5) if pattern == "ort-fast" else trial.true_ms[i]
    return Stream(true_ms, trial.jitter[i], trial.outlier_p, trial.ambient, overlay, warm)


@dataclass
class Outcome:
    """Where one rule stopped on one stream."""

    calls: int
    seconds: float
    false_stop: bool
    false_stop5: bool
    capped: bool


def run_rule(rule: WarmupRule, stream: Stream, rng: random.Random) -> Outcome:
    """Feed ``stream``'s calls to ``rule`` until it stops."""
    state, elapsed, t = rule.start(), 0.0, 0
    while True:
        ambient = stream.ambient[min(t, len(stream.ambient) - 1)]
        ms = stream.true_ms * ambient * stream.overlay(t, elapsed)
        ms *= math.exp(rng.gauss(0.0, stream.jitter))
        outlier_p = stream.outlier_p + (0.1 if t < stream.warm_outliers else 0.0)
        if rng.random() < outlier_p:
            ms *= rng.uniform(2.0, 6.0)
        elapsed += ms / 1000.0 + CALL_OVERHEAD_S
        t += 1
        state, decision = rule.step(state, WarmupCall(ms, elapsed))
        if decision.stop:
            excess = stream.overlay(t, elapsed) - 1.0
            capped = not decision.reason.startswith(("stable", "fixed"))
            return Outcome(t, elapsed, excess > FALSE_STOP, excess > 0.05, capped)


def rules() -> dict[str, WarmupRule]:
    """The compared rules: the old fixed warm-up, the default and a few variants."""
    return {
        "fixed-10 (old)": fixed_warmup(10),
        "fixed-40": fixed_warmup(40),
        "default": WarmupRule(),
        "3 windows": WarmupRule(windows=3),
        "5 windows": WarmupRule(windows=5),
        "cap 1 s": WarmupRule(max_seconds=1.0),
    }


def _p95(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]


def main(argv: Sequence[str] | None = None) -> int:
    """Run every rule on the same streams of every pattern and print the table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--streams", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    began = time.perf_counter()
    compared = rules()
    print(f"warm-up rule on the synthetic noise model: {args.streams} streams per pattern")
    print(f"  false = share stopped while still > {FALSE_STOP:.0%} slower than steady state")
    print(
        f"  {'rule':<16}{'pattern':<8}{'false':>7}{'>5 %':>7}{'calls':>8}{'p95':>6}"
        f"{'ms':>9}{'capped':>8}"
    )
    summary: dict[str, float] = {}
    for name, rule in compared.items():
        for pattern in PATTERNS:
            master = random.Random(f"{args.seed}-{pattern}")
            outcomes = []
            for _ in range(args.streams):
                stream = make_stream(random.Random(master.getrandbits(64)), pattern)
                outcomes.append(run_rule(rule, stream, random.Random(master.getrandbits(64))))
            false = sum(o.false_stop for o in outcomes) / len(outcomes)
            false5 = sum(o.false_stop5 for o in outcomes) / len(outcomes)
            calls = [float(o.calls) for o in outcomes]
            print(
                f"  {name:<16}{pattern:<8}{false:>7.1%}{false5:>7.1%}"
                f"{statistics.fmean(calls):>8.1f}{_p95(calls):>6.0f}"
                f"{statistics.fmean(o.seconds for o in outcomes) * 1e3:>9.1f}"
                f"{sum(o.capped for o in outcomes) / len(outcomes):>8.1%}"
            )
            summary[f"{name}/{pattern}"] = false
    print(
        "warmup: "
        + " ".join(
            f"{label}_false_{p}={summary[f'{name}/{p}'] * 100:.1f}%"
            for label, name in (("default", "default"), ("fixed10", "fixed-10 (old)"))
            for p in ("ort", "ort-fast", "jit", "clock")
        )
        + f" ({time.perf_counter() - began:.1f} s)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
