"""The CLI is right by default: no ``--strategy`` means ``confident:max-throughput``."""

from __future__ import annotations

import pytest

from aitune_fp.cli.parser import DEFAULT_STRATEGY, build_parser
from aitune_fp.core.strategies import latency_budget, max_throughput, min_latency


@pytest.mark.parametrize("command", [["demo"], ["tune", "m.py:build"]])
def test_without_strategy_tune_and_demo_decide_with_the_confident_rule(command: list[str]) -> None:
    """demo and tune default to the confident comparison over max throughput."""
    args = build_parser().parse_args(command)
    assert DEFAULT_STRATEGY == "confident:max-throughput"
    assert args.strategy.name == "confident(max_throughput)"
    assert args.strategy.confidence is not None


@pytest.mark.parametrize("command", [["demo"], ["tune", "m.py:build"]])
def test_strategy_max_throughput_still_means_the_plain_rule(command: list[str]) -> None:
    """--strategy max-throughput names the plain reference rule, with no confidence rule."""
    args = build_parser().parse_args([*command, "--strategy", "max-throughput"])
    assert args.strategy.name == max_throughput.name == "max_throughput"
    assert args.strategy.confidence is None and max_throughput.confidence is None


def test_api_values_are_the_plain_rules() -> None:
    """The API's max_throughput / min_latency / latency_budget carry no confidence rule."""
    assert (max_throughput.name, min_latency.name) == ("max_throughput", "min_latency")
    assert max_throughput.confidence is None and min_latency.confidence is None
    assert latency_budget(5.0).confidence is None
