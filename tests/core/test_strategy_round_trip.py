"""Every shipped strategy and combinator restores from its stored config (run.json).

The laws run over composed strategies (``aitune_fp.testing.composed``): a base strategy
under up to three distinct combinators, so every combinator is restored inside every
other, and the restored strategy must decide exactly as the original.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aitune_fp.core.fold import start, step
from aitune_fp.core.record.run_record import dumps, loads, reselect
from aitune_fp.core.records import Profile, TuneState
from aitune_fp.core.strategies import declared
from aitune_fp.core.strategies.registry import (
    DECLARATIONS,
    RESTORERS,
    STRATEGY_SPECS,
    parse_strategy,
    strategy_config,
    strategy_from_config,
)
from aitune_fp.core.strategy import Strategy
from aitune_fp.testing import BASELINE_NAME, baselines, candidate_lists, profiles
from aitune_fp.testing.composed import (
    COMBINATORS,
    base_strategies,
    composed_strategies,
    wrappers,
)
from aitune_fp.testing.generators import BACKEND_NAMES, results_for
from tests.core.run_record_strategies import run_records


def restored(strategy: Strategy) -> Strategy:
    """``strategy`` written as run.json writes it (JSON text) and rebuilt from it."""
    text = json.dumps(strategy_config(strategy, ["a", "b"]), sort_keys=True)
    return strategy_from_config(json.loads(text))


def outcome(fn: Callable[..., Any], *args: Any) -> tuple[str, Any]:
    """What calling ``fn`` gives: its value (NaN as a name) or the error it raises."""
    try:
        value = fn(*args)
    except (ValueError, ZeroDivisionError, ArithmeticError) as error:
        return ("raised", f"{type(error).__name__}: {error}")
    return ("nan", None) if isinstance(value, float) and math.isnan(value) else ("ok", value)


@given(composed_strategies())
def test_a_restored_strategy_has_the_same_config_name_title_and_rule(strategy: Strategy) -> None:
    """strategy_from_config(strategy_config(s)) has s's name, title, params, plan and rule."""
    again = restored(strategy)
    assert strategy_config(again) == strategy_config(strategy)
    assert (again.name, again.title, again.description) == (
        strategy.name,
        strategy.title,
        strategy.description,
    )
    assert again.params == strategy.params
    assert again.confidence == strategy.confidence
    assert again.no_winner_message == strategy.no_winner_message
    assert again.metric == strategy.metric


@given(st.data(), composed_strategies())
def test_a_restored_strategy_measures_compares_and_states_speedups_alike(
    data: st.DataObject, strategy: Strategy
) -> None:
    """The restored strategy gives the same measure, compare and speedup results."""
    again = restored(strategy)
    for profile in data.draw(st.lists(profiles(), min_size=1, max_size=3)):
        assert again.measure(profile) == strategy.measure(profile)
    a, b = data.draw(results_for(strategy)), data.draw(results_for(strategy))
    for x, y in ((a, b), (b, a), (a, a)):
        assert outcome(again.compare, x, y) == outcome(strategy.compare, x, y)
        assert outcome(again.speedup, x, y) == outcome(strategy.speedup, x, y)


def _states(strategy: Strategy, data: st.DataObject) -> list[TuneState]:
    """Every state of the fold of ``strategy`` over generated candidates."""
    state = start(strategy, data.draw(baselines()))
    states = [state]
    for candidate in data.draw(candidate_lists(max_size=4)):
        state = step(strategy, state, candidate)
        states.append(state)
    return states


@given(st.data(), composed_strategies())
def test_a_restored_strategy_admits_and_settles_alike(
    data: st.DataObject, strategy: Strategy
) -> None:
    """``admits`` and ``settled`` are present on both or neither, and agree everywhere."""
    again = restored(strategy)
    assert (again.admits is None, again.settled is None) == (
        strategy.admits is None,
        strategy.settled is None,
    )
    if strategy.admits is not None and again.admits is not None:
        for name in (*BACKEND_NAMES, BASELINE_NAME):
            assert again.admits(name) == strategy.admits(name)
    if strategy.settled is not None and again.settled is not None:
        for state in _states(strategy, data):
            assert again.settled(state) == strategy.settled(state)


@given(st.sampled_from(COMBINATORS), st.data())
def test_a_run_written_with_any_combinator_reloads_and_reselects(
    combinator: str, data: st.DataObject
) -> None:
    """A run.json written with the combinator (outermost) loads, restores and re-selects alike."""
    strategy = data.draw(composed_strategies(outer=combinator, max_layers=2))
    record = data.draw(run_records(strategy))
    loaded = loads(dumps(record))
    again = strategy_from_config(loaded.strategy)
    assert again.name == strategy.name
    assert again.name.startswith(combinator) or combinator == "with_min_speedup"
    result = reselect(loaded, again)
    assert result.value_or(None) == record.selection
    assert result.swap().value_or(None) == record.error


@pytest.mark.parametrize("combinator", COMBINATORS)
@given(data=st.data())
def test_each_combinator_declares_every_parameter_it_adds(
    combinator: str, data: st.DataObject
) -> None:
    """A combinator's declared ``own`` keys are the parameters it adds to its inner strategy."""
    inner = data.draw(base_strategies())
    wrapped = data.draw(wrappers(combinator))(inner)
    added = set(wrapped.params) - set(inner.params)
    declaration = RESTORERS[wrapped.name.partition("(")[0]] if wrapped is not inner else None
    assert declaration is None or added <= set(declaration.own)
    assert declaration is None or isinstance(declaration, declared.Combinator)


def test_every_declaration_is_listed_once_and_every_example_parses() -> None:
    """Names and specs are unique, and each listed spec parses with a strategy after it."""
    assert len({d.name for d in DECLARATIONS}) == len(DECLARATIONS)
    assert len({d.spec for d in DECLARATIONS}) == len(DECLARATIONS)
    assert STRATEGY_SPECS[:3] == ("max-throughput", "min-latency", "latency-budget=5ms")
    assert STRATEGY_SPECS[-1] == "confident:<spec>"
    for example in STRATEGY_SPECS:
        strategy = parse_strategy(example.replace("<spec>", "min-latency"))
        assert strategy_config(restored(strategy)) == strategy_config(strategy)


SPEEDUP = "with_min_speedup(min_latency)"


@pytest.mark.parametrize(
    ("spec", "name", "params"),
    [
        ("first-wins:min-latency", "first_wins(min_latency)", {"first_wins": True}),
        ("robust:max-throughput", "robust(max_throughput)", {"batch_statistic": "trimmed"}),
        ("robust=Median:max-throughput", "robust(max_throughput)", {"batch_statistic": "median"}),
        ("min-speedup=1.1:min-latency", SPEEDUP, {"min_speedup_ratio": 1.1}),
        ("min_speedup=10%:min-latency", SPEEDUP, {"min_speedup_ratio": 1.1}),
        ("one-backend=onnxruntime:max-throughput", "one_backend(max_throughput)",
         {"backend": "onnxruntime"}),
        ("min-latency-at=p99.9", "min_latency_at", {"percentile": 99.9}),
        ("min-latency-at", "min_latency_at", {"percentile": 99.0}),
        ("latency-budget=5ms,p99", "latency_budget", {"budget_ms": 5.0, "percentile": 99.0}),
        ("confident:first-wins:within-accuracy=1%:min-latency",
         "confident(first_wins(within_accuracy(min_latency)))", {"max_drop": 0.01}),
    ],
)  # fmt: skip
def test_combinator_specs_parse_to_their_combinators(
    spec: str, name: str, params: dict[str, object]
) -> None:
    """Each new spec names its combinator with the parameters typed."""
    strategy = parse_strategy(spec)
    assert strategy.name == name
    assert {k: strategy.params[k] for k in params} == pytest.approx(params)


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("first-wins=2:min-latency", "takes no parameter"),
        ("first-wins:", "needs a strategy after it"),
        ("one-backend:min-latency", "one-backend needs a value"),
        ("min-speedup=0.9:min-latency", "ratio is a speedup factor"),
        ("min-speedup=fast:min-latency", "min-speedup is a factor"),
        ("robust=p1000:min-latency", "statistic must be"),
        ("min-latency-at=p0", "a percentile is"),
        ("latency-budget=5ms,fast", "a percentile is"),
        ("max-throughput:min-latency", "unknown strategy"),
        ("min-latency-at:min-latency", "unknown strategy"),
    ],
)
def test_bad_combinator_specs_say_what_is_accepted(spec: str, says: str) -> None:
    """A malformed combinator spec is a ValueError naming what is accepted."""
    with pytest.raises(ValueError, match=says):
        parse_strategy(spec)


def test_stored_configs_from_before_still_restore() -> None:
    """Configs written before the declarations (flat parameters) restore as they did."""
    old = {
        "strategy": "confident(within_memory(latency_budget))",
        "validate_performance": False,
        "parameters": {"budget_ms": 4.0, "budget_mb": 64.0, "strict_memory": False,
                       "confidence": 0.9, "min_speedup": 0.01, "resamples": 1000, "seed": 0,
                       "statistic": "trimmed"},
    }  # fmt: skip
    strategy = strategy_from_config(old)
    assert strategy.name == old["strategy"] and not strategy.validate_performance
    assert strategy.confidence is not None and strategy.confidence.round_statistic == "trimmed"
    big = Profile("onnxruntime", {1: [1.0], 8: [2.0]}, peak_memory_mb=100.0)
    assert strategy.measure(big).failure().message.startswith("peak memory 100.0 MiB exceeds")
