"""The incumbent combinator: the stored pick, listed first, is never re-ranked by a profile."""

from __future__ import annotations

import dataclasses

from hypothesis import given
from returns.result import Success

from aitune_fp.core.fold import tune
from aitune_fp.core.records import Candidate, Profile
from aitune_fp.core.strategies.incumbent import incumbent
from aitune_fp.core.strategies.max_throughput import max_throughput
from aitune_fp.core.strategies.registry import strategy_config, strategy_from_config
from aitune_fp.core.strategy import Strategy
from aitune_fp.testing import candidate_lists, shipped_strategies


def _first_measured(strategy: Strategy, candidates: tuple[Candidate, ...]) -> str | None:
    """The first candidate that profiled and that ``strategy`` can measure."""
    for c in candidates:
        if isinstance(c, Success) and isinstance(strategy.measure(c.unwrap()), Success):
            return c.unwrap().backend
    return None


@given(shipped_strategies(validate_performance=None), candidate_lists(max_size=5))
def test_only_a_significant_win_displaces_the_first_measured_candidate(
    strategy: Strategy, candidates: tuple[Candidate, ...]
) -> None:
    """Under ``incumbent``, the fold selects the first candidate the strategy can measure
    unless the pick is another that significantly beats it by ``compare``, and fails only
    when none can be measured; identical profiles never displace the first."""
    wrapped = incumbent(strategy)
    found = tune(wrapped, candidates)
    first = _first_measured(strategy, candidates)
    if first is None:
        assert not isinstance(found, Success)
        return
    pick = found.unwrap()
    if pick.backend != first:
        base = next(c.unwrap() for c in candidates if isinstance(c, Success)
                    and c.unwrap().backend == first)  # fmt: skip
        assert wrapped.compare(pick.result, strategy.measure(base).unwrap())
    twins = tuple(Success(dataclasses.replace(c.unwrap(), backend=f"{c.unwrap().backend}-{i}"))
                  for i, c in enumerate(candidates[:1] * 3) if isinstance(c, Success))  # fmt: skip
    if twins and isinstance(strategy.measure(twins[0].unwrap()), Success):
        assert tune(wrapped, twins).unwrap().backend == twins[0].unwrap().backend


def test_incumbent_turns_validation_off_and_round_trips_through_its_config() -> None:
    """The incumbent never falls back to a baseline and restores from the record's config."""
    pick = Success(Profile("pick", {8: [2.0, 2.2, 2.1]}))
    fast = Success(Profile("fast", {8: [1.9, 2.1, 2.0]}))
    base = Success(Profile("eager", {8: [0.5]}))
    wrapped = incumbent(max_throughput)
    assert not wrapped.validate_performance
    assert tune(wrapped, [pick, fast], base).unwrap().backend == "pick"
    restored = strategy_from_config(strategy_config(wrapped, ["pick", "fast"]))
    assert restored.name == wrapped.name and restored.params == wrapped.params
