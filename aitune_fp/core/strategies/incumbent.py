"""The incumbent: a stored pick re-verified keeps its place unless the evidence moves it.

Rule: ``incumbent(strategy)`` keeps the strategy's measure, speedup and metric, turns
performance validation off (no baseline: the stored run already checked the pick against
it under the same keys) and makes ``compare`` never strict, so the fold's tie rule (a tie
keeps the earlier leader) keeps the first candidate that succeeds: the stored pick, listed
first. A short profile of two candidates on a loaded machine is no evidence that one is
faster; only the verification's paired rounds may move the pick, by its own rule (the
runner-up faster beyond the margin with 95 % confidence). The decision cache's hit runs
under it (:mod:`aitune_fp.shell.decided`). Not offered on the command line.

>>> from returns.result import Success
>>> from aitune_fp.core.fold import tune
>>> from aitune_fp.core.records import Profile
>>> from aitune_fp.core.strategies.max_throughput import max_throughput
>>> cands = [Success(Profile("pick", {8: [2.0]})), Success(Profile("rival", {8: [1.0]}))]
>>> tune(incumbent(max_throughput), cands).unwrap().backend
'pick'
>>> tune(max_throughput, cands, baseline=None).unwrap().backend
'rival'
"""

from __future__ import annotations

from dataclasses import replace

from aitune_fp.core.records import BackendProfilingResult
from aitune_fp.core.strategies.declared import Combinator, Params
from aitune_fp.core.strategy import Strategy


def never_strict(_a: BackendProfilingResult, _b: BackendProfilingResult) -> bool:
    """No candidate is strictly better than another: the earlier one keeps the lead."""
    return False


def incumbent(strategy: Strategy) -> Strategy:
    """``strategy`` under which the first candidate to succeed is the pick (module rule)."""
    return replace(
        strategy,
        name=f"incumbent({strategy.name})",
        title=f"{strategy.title}, stored pick re-verified",
        description=(
            f"{strategy.description} The stored pick is kept unless the verification's "
            "paired rounds show another candidate faster beyond the margin."
        ),
        compare=never_strict,
        validate_performance=False,
        params=strategy.params.set("incumbent", True),
    )


def _restore(_params: Params, inner: Strategy) -> Strategy:
    return incumbent(inner)


DECLARED = (Combinator("incumbent", _restore, own=("incumbent",), rank=900),)
