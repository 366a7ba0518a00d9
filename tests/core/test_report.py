"""Reports as data: lines and configs for every shipped strategy, property-tested."""

from __future__ import annotations

import json
import re

from hypothesis import given
from hypothesis import strategies as st
from returns.pipeline import is_successful

from aitune_fp import Selection, Strategy, tune
from aitune_fp.core.laws import FoldCase
from aitune_fp.core.report.lines import (
    baseline_selected_line,
    describe,
    selected_line,
    speedup_line,
    summary_lines,
)
from aitune_fp.core.strategies.registry import strategy_config
from aitune_fp.testing import fold_cases, shipped_strategies

SPEEDUP = re.compile(r"^Speedup: (\S+) (samples/s|ms) → (\S+) (samples/s|ms) \((\d+\.\d{2})×\)$")
names = st.lists(st.sampled_from(["eager", "inductor", "onnxruntime", "tensorrt"]), unique=True)


def _selected(strategy: Strategy, case: FoldCase) -> Selection | None:
    """The selection ``tune`` makes for ``case``, or ``None`` when it fails."""
    outcome = tune(strategy, case.candidates, case.baseline)
    return outcome.unwrap() if is_successful(outcome) else None


@given(strategy=shipped_strategies(validate_performance=None), backends=names)
def test_config_is_json_and_round_trips(strategy: Strategy, backends: list[str]) -> None:
    """A strategy's config survives a JSON round trip and carries its parameters."""
    config = strategy_config(strategy, backends)
    assert json.loads(json.dumps(config)) == config
    assert config["backends"] == backends
    assert config["validate_performance"] == strategy.validate_performance
    assert config["parameters"] == dict(strategy.params)


@given(strategy=shipped_strategies(validate_performance=None), backends=names)
def test_description_names_title_and_backends(strategy: Strategy, backends: list[str]) -> None:
    """The description starts with the title and lists every backend given."""
    text = describe(strategy, backends)
    assert text.splitlines()[0] == strategy.title
    assert all(name in text for name in backends)


@given(strategy=shipped_strategies(), case=fold_cases())
def test_selected_line_states_backend_batch_and_metric(strategy: Strategy, case: FoldCase) -> None:
    """The selected line names the backend, its batch size and its formatted metric."""
    selection = _selected(strategy, case)
    if selection is not None:
        line = selected_line(strategy, selection)
        assert line.startswith(f"Selected {selection.backend} ")
        assert f"(batch size {selection.result.selected_batch_size})" in line
        assert line.endswith(f"{strategy.metric_label} {strategy.fmt(selection.result.metric)}")


@given(strategy=shipped_strategies(), case=fold_cases())
def test_speedup_line_format(strategy: Strategy, case: FoldCase) -> None:
    """With a baseline, the speedup line reads 'baseline → metric (x.xx×)' in the unit."""
    selection = _selected(strategy, case)
    if selection is not None and selection.baseline is not None:
        match = SPEEDUP.match(speedup_line(strategy, selection) or "")
        assert match is not None
        assert match.group(1) == format(selection.baseline.result.metric, strategy.value_fmt)
        assert match.group(3) == format(selection.result.metric, strategy.value_fmt)


@given(strategy=shipped_strategies(), case=fold_cases())
def test_summary_mentions_fallback_and_failures(strategy: Strategy, case: FoldCase) -> None:
    """The summary says when the baseline was kept and lists every failure."""
    selection = _selected(strategy, case)
    if selection is not None:
        lines = summary_lines(strategy, selection)
        assert (baseline_selected_line(selection) in lines) == selection.fell_back_to_baseline
        assert all(f.describe() in lines for f in selection.failures)
