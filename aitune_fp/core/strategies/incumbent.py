"""The incumbent: a stored pick re-verified keeps its place unless the evidence moves it.

Rule: ``incumbent(strategy)`` keeps the strategy's measure, speedup and metric, turns
performance validation off (no baseline: the stored run already checked the pick against
it under the same keys) and makes ``compare`` the significance rule
(:func:`~aitune_fp.core.stats.confidence.beats` under the strategy's confidence rule, the
default one for a plain strategy; never strict for a metric without a kind): a later
candidate leads only when its samples show it faster beyond the rule's minimum speedup,
else the fold's tie rule (a tie keeps the earlier leader) keeps the first candidate that
succeeds: the stored pick, listed first. A point estimate from a short profile on a loaded
machine never moves the pick; the verification's paired rounds then judge it by their own
rule (the runner-up faster beyond the margin with 95 % confidence). The decision cache's
hit runs under it (:mod:`aitune_fp.shell.decided`). Not offered on the command line.

>>> from returns.result import Success
>>> from aitune_fp.core.fold import tune
>>> from aitune_fp.core.records import Profile
>>> from aitune_fp.core.strategies.max_throughput import max_throughput
>>> near = [Success(Profile("pick", {8: [2.0, 2.2]})), Success(Profile("b", {8: [1.9, 2.1]}))]
>>> kept = tune(incumbent(max_throughput), near).unwrap().backend
>>> kept, tune(max_throughput, near).unwrap().backend
('pick', 'b')
>>> far = [Success(Profile("pick", {8: [4.0] * 5})), Success(Profile("b", {8: [1.0] * 5}))]
>>> tune(incumbent(max_throughput), far).unwrap().backend
'b'
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial

from aitune_fp.core.records import BackendProfilingResult
from aitune_fp.core.stats.confidence import ConfidenceRule, beats
from aitune_fp.core.strategies.declared import Combinator, Params
from aitune_fp.core.strategy import Compare, Strategy


def never_strict(_a: BackendProfilingResult, _b: BackendProfilingResult) -> bool:
    """No candidate is strictly better than another: the earlier one keeps the lead."""
    return False


def significant(strategy: Strategy) -> Compare:
    """``strategy``'s significance rule as a compare (see the module rule)."""
    kind = strategy.metric.kind
    if kind is None:
        return never_strict
    return partial(beats, strategy.confidence or ConfidenceRule(), kind)


def incumbent(strategy: Strategy) -> Strategy:
    """``strategy`` under which the first candidate to succeed is the pick (module rule)."""
    return replace(
        strategy,
        name=f"incumbent({strategy.name})",
        title=f"{strategy.title}, stored pick re-verified",
        description=(
            f"{strategy.description} The stored pick is kept unless another candidate is "
            "significantly faster."
        ),
        compare=significant(strategy),
        validate_performance=False,
        params=strategy.params.set("incumbent", True),
    )


def _restore(_params: Params, inner: Strategy) -> Strategy:
    return incumbent(inner)


DECLARED = (Combinator("incumbent", _restore, own=("incumbent",), rank=900),)
