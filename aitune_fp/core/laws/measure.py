"""Measure laws: ``measure`` is deterministic, picks a measured batch size, blames its own.

Every law here takes ``(strategy, profile)``.
"""

from __future__ import annotations

from returns.result import Failure, Success

from aitune_fp.core.laws.law import Law
from aitune_fp.core.records import Profile
from aitune_fp.core.strategy import Strategy


def _measure_failure_names_backend(strategy: Strategy, profile: Profile) -> bool:
    match strategy.measure(profile):
        case Failure(failure):
            return bool(failure.backend == profile.backend and failure.stage == "measure")
    return True


def _measure_picks_measured_batch(strategy: Strategy, profile: Profile) -> bool:
    match strategy.measure(profile):
        case Success(result):
            return result.selected_batch_size in profile.batch_sizes
    return True


def _measure_deterministic(strategy: Strategy, profile: Profile) -> bool:
    return bool(strategy.measure(profile) == strategy.measure(profile))


MEASURE_LAWS: tuple[Law[[Strategy, Profile]], ...] = (
    Law(
        "measure_failure_names_backend",
        "a measure failure names the profile's backend at stage 'measure'",
        _measure_failure_names_backend,
    ),
    Law(
        "measure_picks_measured_batch",
        "a measured result's batch size is one the profile measured",
        _measure_picks_measured_batch,
    ),
    Law(
        "measure_deterministic",
        "measuring a profile twice gives equal results",
        _measure_deterministic,
    ),
)
