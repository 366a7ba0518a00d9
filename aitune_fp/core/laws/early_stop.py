"""Early-stop laws: the rule never stops the baseline, stops only a candidate the current
best clearly beats under the strategy's own compare and the confident comparison's noise
model, lets close candidates go on, and says why in one line.

Every law here takes ``(rule, best, probe)``: the current best's result and a candidate's
probe at one batch size. The rate at which the rule stops the true winner on the synthetic
noise model is a measured figure, not a law of single inputs: ``benchmarks/early_stop.py``
prints it and a test checks it against
:data:`aitune_fp.core.measure.early_stop.WINNER_STOP_RATE`.
"""

from __future__ import annotations

from aitune_fp.core.laws.law import Law, implies
from aitune_fp.core.measure.early_stop import EarlyStopRule, Probe
from aitune_fp.core.records import BackendProfilingResult, Profile
from aitune_fp.core.stats.confidence import beats, costs

BEST = "best"


def _stops(rule: EarlyStopRule, best: BackendProfilingResult, probe: Probe) -> bool:
    _, decision = rule.step(rule.start(BEST, best, baseline=False), probe)
    return decision.stop


def _measured(rule: EarlyStopRule, probe: Probe) -> BackendProfilingResult | None:
    profile = Profile("candidate", {probe.batch_size: probe.samples_ms})
    return rule.strategy.measure(profile).value_or(None)


def _never_baseline(rule: EarlyStopRule, best: BackendProfilingResult, probe: Probe) -> bool:
    _, decision = rule.step(rule.start(BEST, best, baseline=True), probe)
    return not decision.stop


def _needs_best(rule: EarlyStopRule, _best: BackendProfilingResult, probe: Probe) -> bool:
    _, decision = rule.step(rule.start(None, None, baseline=False), probe)
    return not decision.stop


def _clearly_beaten(rule: EarlyStopRule, best: BackendProfilingResult, probe: Probe) -> bool:
    """A stop means the strategy's compare and the wide interval both say 'best is better'."""
    if not _stops(rule, best, probe):
        return True
    result = _measured(rule, probe)
    return (
        result is not None
        and rule.strategy.compare(best, result)
        and beats(rule.wide, rule.kind, best, result)
    )


def _close_goes_on(rule: EarlyStopRule, best: BackendProfilingResult, probe: Probe) -> bool:
    """A probe whose every per-sample cost is at most the best's smallest never stops."""
    result = _measured(rule, probe)
    if result is None:
        return not _stops(rule, best, probe)
    dominated = max(costs(rule.kind, result)) <= min(costs(rule.kind, best))
    return implies(dominated, not _stops(rule, best, probe))


def _same_as_best_goes_on(rule: EarlyStopRule, best: BackendProfilingResult, _p: Probe) -> bool:
    """A probe that repeats the best's own samples at its batch size never stops (a best
    without samples has nothing to repeat: vacuous)."""
    probe = Probe(best.selected_batch_size, best.samples_ms)
    return not best.samples_ms or not _stops(rule, best, probe)


def _slower_still_stops(rule: EarlyStopRule, best: BackendProfilingResult, probe: Probe) -> bool:
    """A probe twice as slow as one that stops also stops (when the strategy measures it)."""
    slower = Probe(probe.batch_size, tuple(2.0 * s for s in probe.samples_ms))
    premise = _stops(rule, best, probe) and _measured(rule, slower) is not None
    return implies(premise, _stops(rule, best, slower))


def _reason_one_line(rule: EarlyStopRule, best: BackendProfilingResult, probe: Probe) -> bool:
    """A stop has a one-line reason naming the batch size; the summary is one line too."""
    state, decision = rule.step(rule.start(BEST, best, baseline=False), probe)
    summary = rule.stopped_early(state)
    if not decision.stop:
        return summary is None and not state.stops
    return (
        bool(decision.reason)
        and "\n" not in decision.reason
        and f"batch size {probe.batch_size}" in decision.reason
        and summary is not None
        and "\n" not in summary
        and [bs for bs, _, _ in state.stops] == [probe.batch_size]
    )


EARLY_STOP_LAWS: tuple[Law[[EarlyStopRule, BackendProfilingResult, Probe]], ...] = (
    Law("early_stop_never_baseline", "the baseline is never stopped early", _never_baseline),
    Law("early_stop_needs_best", "without a current best nothing stops early", _needs_best),
    Law(
        "early_stop_clearly_beaten",
        "a stop means the best beats the probe under compare and the wide interval",
        _clearly_beaten,
    ),
    Law(
        "early_stop_close_goes_on",
        "a probe no costlier than the best's cheapest sample never stops",
        _close_goes_on,
    ),
    Law(
        "early_stop_same_as_best_goes_on",
        "a probe repeating the best's own measured samples never stops",
        _same_as_best_goes_on,
    ),
    Law(
        "early_stop_slower_still_stops",
        "a probe twice as slow as a stopped one is stopped too",
        _slower_still_stops,
    ),
    Law(
        "early_stop_reason_one_line",
        "a stop says why in one line naming the batch size, and is recorded",
        _reason_one_line,
    ),
)
