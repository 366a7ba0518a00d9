"""Fleet plans run by the local executor: real tune processes, crashes, resume after a kill."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aitune_fp.cli.main import main
from aitune_fp.core.fleet import expand
from aitune_fp.core.record.run_record import loads
from aitune_fp.shell.fleet.run_plan import job_spec, load_plan
from aitune_fp.shell.fleet.store import read_index

MODELS = """
import os, signal, time
from pathlib import Path

import torch

HERE = Path(__file__).parent


def _tiny():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU()), [torch.randn(2, 4)] * 2


def flaky():
    marker = HERE / "flaky.attempts"
    marker.write_text(marker.read_text() + "x" if marker.exists() else "x")
    if len(marker.read_text()) == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    return _tiny()


def doomed():
    os.kill(os.getpid(), signal.SIGKILL)


def broken():
    raise RuntimeError("weights not found")


def slow():
    time.sleep(1.5)
    return _tiny()
"""


def _plan(
    tmp_path: Path, body: str, *, backends: str = '["eager"]', retries: int = 1, extra: str = ""
) -> Path:
    (tmp_path / "zoo.py").write_text(MODELS)
    path = tmp_path / "plan.toml"
    head = f"backends = {backends}\nmax_batch_size = 2\nplot = false\nretries = {retries}\n{extra}"
    path.write_text(head + body + '\n[[targets]]\ndevice = "cpu"\n')
    return path


def _run(plan: Path, out: Path, *extra: str) -> int:
    cache = str(out.parent / "cache")
    return main(["fleet", "run", str(plan), "--out", str(out), "--cache-dir", cache, *extra])


@pytest.mark.heavy
def test_two_demo_models_end_to_end_then_resume_skips_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each job writes its run.json; the index, report and summary follow; a rerun keeps all."""
    plan = _plan(
        tmp_path,
        'strategies = ["max-throughput"]\n[[models]]\nname = "mlp"\n[[models]]\nname = "cnn"\n',
        backends='["eager", "onnxruntime"]',
    )
    out = tmp_path / "out"
    assert _run(plan, out) == 0
    index = read_index(out)
    assert index is not None
    assert [(e.job, e.status) for e in index.entries] == [
        ("mlp/cpu/max-throughput", "complete"),
        ("cnn/cpu/max-throughput", "complete"),
    ]
    for entry in index.entries:
        record = loads((out / entry.job / "run.json").read_text())
        assert record.model == entry.model and record.selection is not None
        assert (out / entry.job / "report.md").is_file() and (
            out / entry.job / "tune.log"
        ).is_file()
    assert "fleet summary" in capsys.readouterr().out
    stamps = {e.job: (out / e.job / "run.json").stat().st_mtime_ns for e in index.entries}

    assert _run(plan, out) == 0
    again = read_index(out)
    assert again is not None and {e.status for e in again.entries} == {"skipped"}
    assert stamps == {e.job: (out / e.job / "run.json").stat().st_mtime_ns for e in again.entries}
    assert main(["fleet", "report", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert [r["backend"] is not None for r in summary["jobs"]] == [True, True]
    assert (out / "summary.md").is_file() and (out / "summary-cpu.png").is_file()

    previous = read_index(out)
    jobs = expand(load_plan(plan))
    kept = [job_spec(j, tmp_path, out, previous, force=False, cache_dir=None) for j in jobs]
    forced = [job_spec(j, tmp_path, out, previous, force=True, cache_dir=None) for j in jobs]
    assert all(s.stored_environment is not None for s in kept)
    assert all(s.stored_environment is None for s in forced)


def test_crashes_are_retried_and_never_take_the_plan_down(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A tune killed once is retried to completion (its tuned module saved with the run); one
    killed every time, or erroring, fails alone; the plan finishes and exits 1 naming them."""
    models = "".join(
        f'[[models]]\nname = "{n}"\nfactory = "zoo.py:{n}"\n' for n in ("flaky", "doomed", "broken")
    )
    plan = _plan(tmp_path, f'strategies = ["min-latency"]\n{models}', extra="save = true\n")
    out = tmp_path / "out"
    assert _run(plan, out) == 1
    index = read_index(out)
    assert index is not None
    by_model = {e.model: e for e in index.entries}
    assert (by_model["flaky"].status, by_model["flaky"].attempts) == ("complete", 2)
    assert (tmp_path / "flaky.attempts").read_text() == "xx"
    assert (out / by_model["flaky"].job / "saved" / "manifest.json").is_file()
    assert (by_model["doomed"].status, by_model["doomed"].attempts) == ("failed", 2)
    assert "SIGKILL" in by_model["doomed"].message
    assert (by_model["broken"].status, by_model["broken"].attempts) == ("failed", 1)
    assert "weights not found" in by_model["broken"].message
    err = capsys.readouterr().err
    assert "2 of 3 jobs did not complete" in err and "Traceback" not in err


def test_a_killed_plan_resumes_with_only_the_missing_jobs(tmp_path: Path) -> None:
    """SIGKILL of the fleet mid-plan leaves the unfinished jobs interrupted; the rerun runs
    exactly those and keeps the finished ones untouched."""
    strategies = '["max-throughput", "min-latency", "latency-budget=1s"]'
    plan = _plan(tmp_path, f'strategies = {strategies}\n[[models]]\nname = "slow"\n'
                 'factory = "zoo.py:slow"\n')  # fmt: skip
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    command = [sys.executable, "-m", "aitune_fp", "fleet", "run", str(plan), "--out", str(out),
               "--cache-dir", str(tmp_path / "cache")]  # fmt: skip
    fleet = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and fleet.poll() is None:
        index = read_index(out)
        if index is not None and any(e.status == "complete" for e in index.entries):
            break
        time.sleep(0.05)
    os.kill(fleet.pid, signal.SIGKILL)
    fleet.wait()
    killed = read_index(out)
    assert killed is not None
    done = {e.job for e in killed.entries if e.status == "complete"}
    missing = {e.job for e in killed.entries if e.status == "interrupted"}
    assert done and missing and len(done | missing) == 3
    stamps = {j: (out / j / "run.json").stat().st_mtime_ns for j in done}

    assert _run(plan, out) == 0
    final = read_index(out)
    assert final is not None
    assert {e.job for e in final.entries if e.status == "skipped"} == done
    assert {e.job for e in final.entries if e.status == "complete"} == missing
    assert stamps == {j: (out / j / "run.json").stat().st_mtime_ns for j in done}


def test_a_bad_plan_is_one_line_naming_line_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A wrong value exits 1 with file, line and field, and nothing is written."""
    plan = _plan(tmp_path, 'strategies = ["min-latency"]\n[[models]]\nname = "resnet"\n')
    out = tmp_path / "out"
    assert _run(plan, out) == 1
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("aitune-fp: ")]
    assert lines == [
        f"aitune-fp: error: {plan} line 7: models[0].name: 'resnet' is not a demo model "
        "(mlp, cnn, transformer); give a factory"
    ]
    assert not out.exists()


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    """An unknown executor or a missing plan argument is argparse's usage error."""
    for argv in (["fleet", "run", "p.toml", "--executor", "dask"], ["fleet", "run"], ["fleet"]):
        with pytest.raises(SystemExit) as caught:
            main(argv)
        assert caught.value.code == 2


def test_report_without_an_index_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """fleet report on a folder without fleet.json exits 1 saying so."""
    assert main(["fleet", "report", str(tmp_path)]) == 1
    assert "no readable" in capsys.readouterr().err
