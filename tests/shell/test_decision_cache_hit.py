"""A decision cache hit's contenders' batch size, and what the command line leaves of it
(its plot drawn in the background, a client that attaches before importing the core)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pyrsistent import pmap

from aitune_fp.core.record.provenance import Provenance
from aitune_fp.core.record.run_record import RunRecord
from tests.shell.test_decision_cache import _tune, short_runs


def test_a_hit_profiles_only_the_picks_batch_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both contenders of a hit's short run are profiled at the batch size the stored pick
    was selected at, and nowhere else."""
    shorts = short_runs(monkeypatch)
    first = _tune(tmp_path).record
    second = _tune(tmp_path).record
    assert first.selection is not None and second.selection is not None
    assert "decision cache hit" in (second.provenance.decision or "")
    size = first.selection.result.selected_batch_size
    (short,) = shorts
    assert len(short.candidates) == 2
    for outcome in short.candidates:
        assert outcome.profile is not None and outcome.profile.batch_sizes == (size,)


def _hit_record(tmp_path: Path) -> RunRecord:
    record = _tune(tmp_path).record
    line = "decision cache hit (x.json): a re-verified against b"
    return dataclasses.replace(record, provenance=Provenance(pmap(), decision=line))


def test_a_hits_plot_is_drawn_in_the_background_after_the_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a hit, ``write_run`` writes ``run.json`` and ``report.md``, removes the previous
    plot and draws nothing in its own process (a figure saved here fails the test); a
    background process then draws ``plot.png``."""
    from matplotlib.figure import Figure
    from rich.console import Console

    from aitune_fp.cli.outputs import write_run
    from aitune_fp.cli.plot_later import is_hit

    record = _hit_record(tmp_path / "cache")
    assert is_hit(record) and not is_hit(dataclasses.replace(record, provenance=Provenance()))
    out = tmp_path / "out"
    out.mkdir()
    (out / "plot.png").write_bytes(b"an older run's plot")

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("a hit's plot was drawn in the command's own process")

    monkeypatch.setattr(Figure, "savefig", refuse)
    written, paths = write_run(record, out, Console(quiet=True))
    assert written.wall == record.wall and [p.name for p in paths] == ["run.json", "report.md"]
    assert not (out / "plot.png").exists() or (out / "plot.png").read_bytes()[:4] == b"\x89PNG"
    deadline = time.monotonic() + 120.0
    while not (out / "plot.png").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert (out / "plot.png").read_bytes()[:4] == b"\x89PNG"


def test_the_console_script_attaches_before_importing_the_core() -> None:
    """``import aitune_fp`` and the console script's attach path import nothing of the
    core (the client of a tune the service runs pays only its interpreter and the attach);
    the core's names still load on first access."""
    code = ("import sys, aitune_fp, aitune_fp.cli.entry, aitune_fp.cli.service_client\n"
            "print(sorted(m for m in sys.modules if m.startswith('aitune_fp.core')))\n"
            "from aitune_fp import tune, max_throughput\n"
            "print(tune.__module__, max_throughput.name)")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)  # fmt: skip
    assert done.stdout.splitlines() == ["[]", "aitune_fp.core.fold max_throughput"]
