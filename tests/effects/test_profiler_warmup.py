"""The profiler's warm-up to steady state and its re-measured first batch size, on fake
runners that play the ONNX Runtime warm-up pattern on a fake clock (no real timing)."""

from __future__ import annotations

import math
import random

import torch
from returns.result import Success
from returns.unsafe import unsafe_perform_io

from aitune_fp.core.fold import tune
from aitune_fp.core.measure.stop_rules import fixed_steps, never_stop
from aitune_fp.core.record.run_record import BackendOutcome, RunRecord, decode, encode
from aitune_fp.core.records import Profile
from aitune_fp.core.strategies import max_throughput, min_latency
from aitune_fp.effects.inputs.samples import normalise_samples
from aitune_fp.effects.measure.profiler import Clocks, SweepPlan, profile_runner
from aitune_fp.effects.measure.timing import ProfileSettings, Timer

CPU = torch.device("cpu")
SAMPLES = normalise_samples([torch.randn(1, 8) for _ in range(3)])
OLD = ProfileSettings(warmup=None, remeasure_first=False)  # 1 priming + fixed warm-up
NEW = ProfileSettings()


class FakeClock:
    """Seconds that pass only when a fake runner says so."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        """The current fake time in seconds."""
        return self.now


class WarmingRunner:
    """A runner whose calls take ``steady_ms`` (per sample of the batch, 1 % jitter) once
    warm: ``slow`` times that for its first ``plateau`` calls, then a linear decay to
    steady by call ``settle`` (the ONNX Runtime pattern when plateau ~30, settle 30-60)."""

    def __init__(
        self, clock: FakeClock, steady_ms: float, plateau: int = 0, settle: int = 0, seed: int = 0
    ) -> None:
        self.clock, self.steady_ms = clock, steady_ms
        self.plateau, self.settle = plateau, max(settle, plateau)
        self.slow = 1.4
        self.calls = 0
        self.rng = random.Random(seed)

    def factor(self, call: int) -> float:
        """How much slower than steady call number ``call`` (0-based) is."""
        if call < self.plateau:
            return self.slow
        if call < self.settle:
            return self.slow - (self.slow - 1.0) * (call - self.plateau) / (
                self.settle - self.plateau
            )
        return 1.0

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """Advance the fake clock by this call's latency and return ``x``."""
        ms = self.steady_ms * int(x.shape[0]) ** 0.5 * self.factor(self.calls)
        self.clock.now += ms * math.exp(self.rng.gauss(0.0, 0.01)) / 1000.0
        self.calls += 1
        return x


def fake_timer(clock: FakeClock) -> Timer:
    """Time a call in ms on the fake clock."""

    def time_call(call: object) -> float:
        began = clock.now
        call()  # type: ignore[operator]
        return (clock.now - began) * 1000.0

    return time_call


def _profile(
    name: str, runner: WarmingRunner, clock: FakeClock, settings: ProfileSettings, **kw: object
) -> Profile:
    sizes = kw.get("sizes", (1,))
    rule = kw.get("rule", min_latency.plan.call_rule)
    io = profile_runner(
        name,
        runner,
        SAMPLES,
        CPU,
        SweepPlan(sizes, rule, never_stop()),
        settings,
        clocks=Clocks(timer=fake_timer(clock), clock=clock),
    )
    return unsafe_perform_io(io).unwrap()


def _pick(settings: ProfileSettings) -> tuple[str, Profile]:
    clock = FakeClock()
    eager = _profile("eager", WarmingRunner(clock, 0.170, seed=1), clock, settings)
    ort = WarmingRunner(clock, 0.145, plateau=30, settle=50, seed=2)
    profile = _profile("onnxruntime", ort, clock, settings)
    chosen = tune(min_latency, [Success(profile)], Success(eager)).unwrap().backend
    return chosen, profile


def test_the_onnx_runtime_pattern_is_ranked_right_now_and_was_not_before() -> None:
    """A backend 40 % slow for its first 30 calls (steady by call 50) but truly 15 % faster
    than the baseline: the old fixed 10-call warm-up timed its slow phase and kept the
    baseline; the warm-up rule waits for the steady state and picks it."""
    before, old_profile = _pick(OLD)
    after, new_profile = _pick(NEW)
    assert before == "eager"  # mis-ranked: the old profiler timed calls 12-31
    assert min(old_profile.samples(1)) > 0.145 * 1.05
    assert after == "onnxruntime"
    batch = new_profile.batches[1]
    assert batch.warmup_calls >= 50 and batch.warmup_reason.startswith("stable")
    assert max(new_profile.samples(1)) < 0.145 * 1.05


def test_warmup_samples_are_kept_and_never_used_for_the_metric() -> None:
    """The warm-up's slow samples are in the profile, marked as warm-up, and the metric is
    the timed samples' alone."""
    _, profile = _pick(NEW)
    batch = profile.batches[1]
    assert len(batch.warmup_ms) == batch.warmup_calls
    assert max(batch.warmup_ms) > 0.145 * 1.3  # the slow phase is on record
    result = min_latency.measure(profile).unwrap()
    assert result.samples_ms == profile.samples(1)
    assert result.metric < 0.145 * 1.05


def test_the_first_batch_size_is_remeasured_and_both_figures_kept() -> None:
    """A plateau longer than the warm-up's windows fools the warm-up at the first batch
    size; re-measured after the others, the first point counts at steady state and the
    record keeps the first figure beside it, since the two differ beyond noise."""
    rule = max_throughput.plan.call_rule
    sizes = (1, 2, 4)

    def run(settings: ProfileSettings) -> Profile:
        clock = FakeClock()
        runner = WarmingRunner(clock, 0.145, plateau=80, settle=80, seed=3)
        return _profile("onnxruntime", runner, clock, settings, sizes=sizes, rule=rule)

    old = run(ProfileSettings(remeasure_first=False))
    new = run(NEW)
    assert min(old.samples(1)) > 0.145 * 1.3  # the first point timed the plateau
    assert max(new.samples(1)) < 0.145 * 1.05  # re-measured at steady state
    first = new.batches[1].first_pass_ms
    assert first is not None and min(first) > 0.145 * 1.3
    assert all(new.batches[bs].first_pass_ms is None for bs in (2, 4))


def test_a_steady_backend_keeps_one_figure() -> None:
    """With no warm-up phase the re-measured first point agrees within noise: no first
    figure is kept, and every batch size says how its warm-up ended."""
    clock = FakeClock()
    runner = WarmingRunner(clock, 0.5, seed=4)
    profile = _profile(
        "aot", runner, clock, NEW, sizes=(1, 2), rule=fixed_steps(warmup=10, steps=20)
    )
    assert all(profile.batches[bs].first_pass_ms is None for bs in (1, 2))
    assert all(profile.batches[bs].warmup_reason for bs in (1, 2))


def test_profiled_batches_read_back_from_the_run_record() -> None:
    """Each profiled batch size's warm-up calls, reason, samples and first figure survive the
    run record's JSON, under the pinned names warmup_calls and warmup_reason."""
    _, profile = _pick(NEW)
    record = RunRecord(
        "m",
        "cpu",
        {},
        None,
        (BackendOutcome("onnxruntime", "onnxruntime", "k", {}, profile=profile),),
        None,
        None,
        {},
        {},
        None,
    )
    doc = encode(record)
    batch = doc["candidates"][0]["profile"]["batches"]["1"]
    assert isinstance(batch["warmup_calls"], int) and batch["warmup_calls"] >= 50
    assert batch["warmup_reason"].startswith("stable")
    assert decode(doc) == record
