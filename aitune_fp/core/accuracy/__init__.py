"""Accuracy as data: the policy (:mod:`.policy`), the search space (:mod:`.search`) and
the one figure strategies trade speed against (:mod:`.drop`)."""

from aitune_fp.core.accuracy.drop import accuracy_drop
from aitune_fp.core.accuracy.policy import (
    DEFAULT_POLICY,
    AccuracyPolicy,
    EagerRelative,
    ErrorBound,
    FeatureFloors,
    UserMetric,
    judge,
    metric,
)
from aitune_fp.core.accuracy.search import Search, parse_precisions, parse_search

__all__ = [
    "DEFAULT_POLICY",
    "AccuracyPolicy",
    "EagerRelative",
    "ErrorBound",
    "FeatureFloors",
    "Search",
    "UserMetric",
    "accuracy_drop",
    "judge",
    "metric",
    "parse_precisions",
    "parse_search",
]
