"""Reusing an earlier run's eager baseline: only when asked, only when everything matches."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import pytest
import torch
from pyrsistent import pmap

from aitune_fp.cli.main import main
from aitune_fp.cli.parser import build_parser
from aitune_fp.core.record.run_record import RunRecord, loads
from aitune_fp.core.strategies import min_latency
from aitune_fp.effects.measure.timing import ProfileSettings
from aitune_fp.shell.io import perform
from aitune_fp.shell.tune_module import TuneOptions, TuningRun, run_tuning

SETTINGS = ProfileSettings(max_pool=2, max_seconds_per_batch=0.2)


def _module(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())


def _tune(tmp_path: Path, module: torch.nn.Module, **options: object) -> TuningRun:
    torch.manual_seed(1)
    effect = run_tuning(
        module,
        torch.randn(2, 4),
        min_latency,
        ["eager"],
        TuneOptions(
            cache_dir=tmp_path / "cache",
            isolation=False,
            max_batch_size=2,
            settings=SETTINGS,
            **options,
        ),
    )
    run: TuningRun = perform(effect).unwrap()
    return run


def test_every_run_records_its_baseline_keys_and_a_matching_one_is_reused(tmp_path: Path) -> None:
    """A run records what its baseline depends on; a second run of the same model given the
    first's record reuses that very profile (eager not profiled again), says where from,
    and still tunes a working module."""
    first = _tune(tmp_path, _module(), record_path=tmp_path / "first.json")
    keys = first.record.provenance.baseline_keys
    assert {"model", "inputs", "batch_sizes", "environment", "settings"} <= set(keys)
    assert first.record.provenance.baseline_reused_from is None
    assert first.record.provenance.baseline_refused is None
    second = _tune(tmp_path, _module(), reuse_baseline=tmp_path / "first.json")
    assert second.record.baseline is not None and first.record.baseline is not None
    assert second.record.baseline.profile == first.record.baseline.profile
    assert "profile" not in second.record.baseline.stage_seconds
    assert second.record.provenance.baseline_reused_from == str((tmp_path / "first.json").resolve())
    assert second.tuned is not None and second.tuned(torch.ones(1, 4)).shape == (1, 4)
    again = _tune(tmp_path, _module(), reuse_baseline=first.record)
    assert again.record.provenance.baseline_reused_from == "the given run record"


def _refused(
    tmp_path: Path, previous: RunRecord, caplog: pytest.LogCaptureFixture, module: torch.nn.Module
) -> tuple[TuningRun, str]:
    with caplog.at_level(logging.WARNING, logger="aitune_fp"):
        run = _tune(tmp_path, module, reuse_baseline=previous)
    return run, caplog.text


def test_other_weights_are_refused_by_name_and_the_baseline_is_measured(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A record of other weights is not reused: one warning says the model differs, the
    baseline is profiled afresh and the record says nothing was reused."""
    first = _tune(tmp_path, _module(seed=0))
    run, text = _refused(tmp_path, first.record, caplog, _module(seed=1))
    assert "not reusing the baseline" in text and "its model differs" in text
    assert run.record.provenance.baseline_reused_from is None
    assert "its model differs" in (run.record.provenance.baseline_refused or "")
    assert run.record.baseline is not None and first.record.baseline is not None
    assert run.record.baseline.profile != first.record.baseline.profile
    assert "profile" in run.record.baseline.stage_seconds


def test_another_environment_or_an_older_record_is_refused(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A record made in another environment, or one without baseline keys, is refused with
    a warning saying why."""
    first = _tune(tmp_path, _module()).record
    moved = first.provenance.baseline_keys.set("environment", "elsewhere")
    elsewhere = dataclasses.replace(
        first, provenance=dataclasses.replace(first.provenance, baseline_keys=moved)
    )
    run, text = _refused(tmp_path, elsewhere, caplog, _module())
    assert "its environment differs" in text and run.record.provenance.baseline_reused_from is None
    caplog.clear()
    older = dataclasses.replace(
        first, provenance=dataclasses.replace(first.provenance, baseline_keys=pmap())
    )
    run, text = _refused(tmp_path, older, caplog, _module())
    assert "records no baseline keys" in text and run.record.provenance.baseline_reused_from is None


def test_an_unreadable_record_is_refused_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A missing or broken run.json is named in a warning; the tune goes on and measures."""
    (tmp_path / "broken.json").write_text("{")
    for path in (tmp_path / "missing.json", tmp_path / "broken.json"):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="aitune_fp"):
            run = _tune(tmp_path, _module(), reuse_baseline=path)
        assert f"not reusing the baseline of {path}" in caplog.text
        assert run.record.baseline is not None and run.record.baseline.profile is not None


@pytest.mark.parametrize("command", [["demo"], ["tune", "m.py:build"]])
def test_reuse_baseline_flag_parses_on_tune_and_demo(command: list[str]) -> None:
    """--reuse-baseline RUN_JSON is kept as given on tune and demo; absent, it is None."""
    parser = build_parser()
    assert parser.parse_args(command).reuse_baseline is None
    assert parser.parse_args([*command, "--reuse-baseline", "a/run.json"]).reuse_baseline == (
        "a/run.json"
    )


def test_cli_second_tune_reuses_the_first_runs_baseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two CLI tunes of one file: the second, given the first's run.json, records the
    first's baseline profile and where it came from, and says so; a third, isolated (so
    the keys differ), refuses it with a warning on stderr."""
    factory = tmp_path / "model.py"
    factory.write_text(
        "import torch\n"
        "def build():\n"
        "    torch.manual_seed(0)\n"
        "    return torch.nn.Linear(4, 2), torch.randn(2, 4)\n"
    )
    common = [
        *("tune", f"{factory}:build", "--backends", "eager", "--max-batch-size", "2"),
        *("--strategy", "min-latency", "--no-plot", "--cache-dir", str(tmp_path / "c")),
        *("--verify-seconds", "0", "--no-isolation"),
    ]
    assert main([*common, "--out", str(tmp_path / "one")]) == 0
    first = tmp_path / "one" / "run.json"
    capsys.readouterr()
    assert main([*common, "--out", str(tmp_path / "two"), "--reuse-baseline", str(first)]) == 0
    assert "eager baseline reused from" in capsys.readouterr().err
    one, two = loads(first.read_text()), loads((tmp_path / "two" / "run.json").read_text())
    assert two.provenance.baseline_reused_from == str(first.resolve())
    assert one.baseline is not None and two.baseline is not None
    assert two.baseline.profile == one.baseline.profile
    isolated = [c for c in common if c != "--no-isolation"]
    assert main([*isolated, "--out", str(tmp_path / "three"), "--reuse-baseline", str(first)]) == 0
    assert "warning: not reusing the baseline" in capsys.readouterr().err
    three = loads((tmp_path / "three" / "run.json").read_text())
    assert "its isolation differs" in (three.provenance.baseline_refused or "")
