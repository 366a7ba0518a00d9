"""Parsing strategy specs, budgets, shapes and names."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aitune_fp import latency_budget, max_throughput, min_latency
from aitune_fp.core.parse import parse_budget_ms, parse_names, parse_shape
from aitune_fp.core.strategies.registry import (
    parse_strategy,
    strategy_config,
    strategy_from_config,
)
from aitune_fp.testing import shipped_strategies


@pytest.mark.parametrize(
    ("spec", "name"),
    [
        ("max-throughput", "max_throughput"),
        ("max_throughput", "max_throughput"),
        (" Min-Latency ", "min_latency"),
        ("latency-budget=5", "latency_budget"),
        ("latency_budget=5ms", "latency_budget"),
    ],
)
def test_parse_strategy_accepts_documented_spellings(spec: str, name: str) -> None:
    """Dashes or underscores and any case name the same shipped strategy."""
    assert parse_strategy(spec).name == name


@pytest.mark.parametrize(
    ("text", "ms"), [("5", 5.0), ("5ms", 5.0), ("2.5 ms", 2.5), ("500us", 0.5), ("0.01s", 10.0)]
)
def test_budget_units_convert_to_ms(text: str, ms: float) -> None:
    """Budgets are stored in ms whatever unit was typed."""
    assert parse_budget_ms(text) == pytest.approx(ms)
    assert parse_strategy(f"latency-budget={text}").params["budget_ms"] == pytest.approx(ms)


@pytest.mark.parametrize(
    "spec",
    [
        "",
        "fastest",
        "latency-budget",
        "latency-budget=",
        "latency-budget=0",
        "latency-budget=-1ms",
        "latency-budget=5min",
        "latency-budget=nan",
        "max-throughput=3",
    ],
)
def test_bad_specs_are_value_errors_that_say_what_is_accepted(spec: str) -> None:
    """Every malformed spec is a ValueError mentioning an accepted form."""
    with pytest.raises(ValueError, match=r"max-throughput|latency-budget|budget|no parameter"):
        parse_strategy(spec)


@given(st.floats(min_value=1e-3, max_value=1e6))
def test_budget_specs_round_trip_through_text(budget: float) -> None:
    """latency-budget=<repr(b)>ms parses to exactly latency_budget(b)'s budget."""
    assert parse_strategy(f"latency-budget={budget!r}ms").params["budget_ms"] == budget


@given(shipped_strategies(validate_performance=None))
def test_strategy_from_config_inverts_strategy_config(strategy: object) -> None:
    """A stored configuration gives back a strategy with the same configuration."""
    config = strategy_config(strategy)  # type: ignore[arg-type]
    assert strategy_config(strategy_from_config(config)) == config


def test_strategy_from_config_refuses_unknown_strategies() -> None:
    """A user's own strategy cannot be rebuilt from its stored name."""
    mine = dataclasses.replace(max_throughput, name="mine")
    with pytest.raises(ValueError, match="'mine' is not a shipped strategy"):
        strategy_from_config(strategy_config(mine))


def test_strategy_from_config_keeps_validation_off() -> None:
    """validate_performance=False survives the round trip."""
    off = dataclasses.replace(min_latency, validate_performance=False)
    assert not strategy_from_config(strategy_config(off)).validate_performance
    assert strategy_from_config(strategy_config(latency_budget(3.0))).params["budget_ms"] == 3.0


@given(st.lists(st.integers(1, 10_000), min_size=1, max_size=6), st.sampled_from("x×,"))
def test_parse_shape_inverts_joining(dims: list[int], sep: str) -> None:
    """Joining positive dims with x, × or , parses back to the same tuple."""
    assert parse_shape(sep.join(map(str, dims))) == tuple(dims)


@pytest.mark.parametrize("text", ["", "8x", "x8", "8x0", "8x-1", "8xa", "8.5x2"])
def test_parse_shape_refuses_malformed_shapes(text: str) -> None:
    """Empty parts, zeros, negatives and non-integers are refused."""
    with pytest.raises(ValueError, match="input shape must be positive integers"):
        parse_shape(text)


def test_parse_names_keeps_order_and_drops_blanks() -> None:
    """Comma-separated names keep their order; blanks are dropped."""
    assert parse_names(" a ,b,, c,") == ("a", "b", "c")


@pytest.mark.parametrize(
    "spec", ["confident:max-throughput", "confident:min-latency", "Confident:latency-budget=4ms"]
)
def test_confident_specs_round_trip_through_the_stored_config(spec: str) -> None:
    """A confident strategy parsed from a spec is rebuilt identically from its stored config."""

    strategy = parse_strategy(spec)
    again = strategy_from_config(strategy_config(strategy))
    assert strategy.name.startswith("confident(")
    assert (again.name, again.params, again.confidence) == (
        strategy.name,
        strategy.params,
        strategy.confidence,
    )


def test_a_stored_confident_config_without_a_paired_statistic_still_loads() -> None:
    """A record from before ``paired_statistic`` rebuilds with its one statistic for rounds too."""

    config = strategy_config(parse_strategy("confident:min-latency"))
    assert config["parameters"]["paired_statistic"] == "median"
    del config["parameters"]["paired_statistic"]
    rule = strategy_from_config(config).confidence
    assert rule is not None and rule.round_statistic == rule.statistic == "trimmed"
