"""``TuneOptions``: ``run_tuning``'s options as one frozen value, ``tune_module``'s keyword
options field for field (aitune_fp/shell/tune_options.py)."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path

import pytest
import torch

from aitune_fp.effects.isolation import Timeouts
from aitune_fp.shell.tune_module import TuneOptions, run_tuning, tune_module


def test_the_options_are_frozen() -> None:
    """An option cannot be changed in place; ``dataclasses.replace`` makes a new value."""
    options = TuneOptions(cache_dir="c")
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.fresh = True  # type: ignore[misc]
    assert dataclasses.replace(options, fresh=True).fresh and not options.fresh


def test_an_unknown_option_is_refused_at_once(tmp_path: Path) -> None:
    """``tune_module`` with a keyword that is no option raises a ``TypeError`` naming it,
    before anything is built (as a keyword ``run_tuning`` did not take did)."""
    model = torch.nn.Linear(3, 2)
    with pytest.raises(TypeError, match="max_batch"):
        tune_module(model, torch.randn(2, 3), cache_dir=tmp_path, max_batch=2)
    assert not any(tmp_path.iterdir())


def test_run_tuning_takes_no_more_than_its_inputs_and_the_options() -> None:
    """``run_tuning`` takes the module, samples, strategy, backends and one options value;
    ``tune_module`` keeps its device and cache folder and its keyword options."""
    assert list(inspect.signature(run_tuning).parameters) == [
        "module", "samples", "strategy", "backends", "options"
    ]  # fmt: skip
    assert list(inspect.signature(tune_module).parameters) == [
        "module", "samples", "strategy", "backends", "device", "cache_dir", "options"
    ]  # fmt: skip


def test_the_target_and_limits_read_the_options() -> None:
    """The record's target is the record path as a ``Path`` (none without one); the limits
    are the given timeouts, else the defaults."""
    assert TuneOptions().target is None
    assert TuneOptions(record_path="a/run.json").target == Path("a/run.json")
    assert TuneOptions().limits == Timeouts()
    assert TuneOptions(timeouts=Timeouts(60, 1.0)).limits == Timeouts(60, 1.0)
