"""Durable runs: the record on disk is always whole, builds never overwrite each other."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pytest
import torch
from returns.io import IOResult, IOSuccess
from returns.unsafe import unsafe_perform_io

import aitune_fp
from aitune_fp.core.record.run_record import loads
from aitune_fp.core.records import BackendFailure
from aitune_fp.effects.backends.base import Built, ConfigIdentity, Declaration
from aitune_fp.effects.inputs.samples import InputSpec, Samples
from aitune_fp.shell.tune_module import TuneOptions, run_tuning
from tests.shell.test_tune_module_fakes import quick

MODEL = Path(__file__).with_name("model_file.py")
NO_BASELINE = dataclasses.replace(quick(aitune_fp.min_latency), validate_performance=False)


@dataclass(frozen=True, slots=True)
class WeightsFile(ConfigIdentity):
    """A loadable fake whose artifact is the module's weights as JSON (one linear layer)."""

    name: str = field(default="weights_file", init=False)
    declaration: ClassVar[Declaration] = Declaration(
        loader=lambda config, r: config.load(r.artifact, r.spec, r.outputs, r.device, r.work_dir)
    )

    def unavailable_reason(self, device: torch.device) -> str | None:
        """Always available."""
        return None

    def build(
        self, module: torch.nn.Module, samples: Samples, device: torch.device, work_dir: Path
    ) -> IOResult[Built, BackendFailure]:
        """Write the layer's weights to ``work_dir/weights.json`` and run from that file."""
        work_dir.mkdir(parents=True, exist_ok=True)
        path = work_dir / "weights.json"
        layer = next(m for m in module.modules() if isinstance(m, torch.nn.Linear))
        path.write_text(json.dumps([layer.weight.tolist(), layer.bias.tolist()]))
        return IOSuccess(self.load(path, samples.spec, None, device, work_dir))

    def load(
        self, artifact: Path, spec: InputSpec, outputs: Any, device: torch.device, work_dir: Path
    ) -> Built:
        """Run ``x @ W.T + b`` with the weights read from ``artifact``."""
        w, b = (torch.tensor(v) for v in json.loads(artifact.read_text()))
        return Built(lambda x: x @ w.T + b, artifact=artifact, info={"device": str(device)})


def _tuned(seed: int, cache: Path) -> Any:
    torch.manual_seed(seed)
    module = torch.nn.Sequential(torch.nn.Linear(8, 4)).eval()
    samples = [torch.randn(1, 8) for _ in range(3)]
    run = unsafe_perform_io(
        run_tuning(
            module,
            samples,
            NO_BASELINE,
            [WeightsFile()],
            TuneOptions(cache_dir=cache, max_batch_size=2),
        ).unwrap()
    )
    assert run.tuned is not None and run.tuned.backend == "weights_file"
    return module, run.tuned


def test_saving_a_after_tuning_b_saves_a(tmp_path: Path) -> None:
    """Tune A, then B (same process, same cache folder, same backend config), then save A:
    the saved module gives A's outputs, because each run builds in its own folder."""
    module_a, tuned_a = _tuned(0, tmp_path / "cache")
    module_b, tuned_b = _tuned(1, tmp_path / "cache")
    assert tuned_a.built.artifact != tuned_b.built.artifact
    folder = aitune_fp.save(tuned_a, tmp_path / "saved")
    w, b = (torch.tensor(v) for v in json.loads((folder / "weights.json").read_text()))
    x = torch.randn(2, 8)
    assert torch.allclose(x @ w.T + b, module_a(x)) and not torch.allclose(x @ w.T + b, module_b(x))
    assert torch.allclose(tuned_a(x), module_a(x)) and torch.allclose(tuned_b(x), module_b(x))


def test_save_refuses_an_artifact_that_changed_after_its_build(tmp_path: Path) -> None:
    """An artifact rewritten after its build (as the old shared work folders allowed) is
    refused by save, naming the file, instead of saving another model."""
    _, tuned = _tuned(0, tmp_path / "cache")
    tuned.built.artifact.write_text(json.dumps([[[0.0] * 8] * 4, [0.0] * 4]))
    with pytest.raises(ValueError, match="changed since weights_file was built"):
        aitune_fp.save(tuned, tmp_path / "saved")
    assert not (tmp_path / "saved").exists()


def test_the_record_is_on_disk_after_every_backend(tmp_path: Path) -> None:
    """With record_path, run.json is this run's record (interrupted, no backend) before the
    first backend starts, each finished backend is in it before the next one starts, and
    the final file is complete with every backend."""
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(8, 4)).eval()
    record = tmp_path / "run.json"
    seen: list[tuple[str, int] | None] = []

    def progress(event: Any) -> None:  # what is on disk as each backend starts
        if event.kind == "backend_start":
            on_disk = loads(record.read_text()) if record.is_file() else None
            seen.append(None if on_disk is None else (on_disk.status, len(on_disk.outcomes)))

    unsafe_perform_io(
        run_tuning(
            module,
            [torch.randn(1, 8)],
            quick(aitune_fp.min_latency),
            [WeightsFile()],
            TuneOptions(
                cache_dir=tmp_path / "cache",
                max_batch_size=2,
                record_path=record,
                progress=progress,
            ),
        ).unwrap()
    )
    assert seen == [("interrupted", 0), ("interrupted", 1)]
    final = loads(record.read_text())
    assert final.status == "complete" and final.baseline is not None and final.candidates


@pytest.fixture
def tiny_disk(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A 1 MiB tmpfs (needs root and mount; skipped otherwise), unmounted afterwards."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"needs root to mount a tmpfs: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_keeps_the_previous_run_json_whole(tmp_path: Path, tiny_disk: Path) -> None:
    """A tune whose --out is on a full disk fails with a one-line error naming the folder,
    and the run.json already there is still the previous, valid record."""
    out = tiny_disk / "out"
    out.mkdir()
    shutil.copy(MODEL, tmp_path / "model.py")
    tune = [sys.executable, "-m", "aitune_fp", "tune", "model.py:make", "--backends", "eager"]
    tune += ["--max-batch-size", "2", "--strategy", "min-latency", "--no-plot"]
    tune += ["--cache-dir", str(tmp_path / "cache"), "--out", str(out)]
    first = subprocess.run(tune, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    previous = (out / "run.json").read_bytes()
    filler = tiny_disk / "filler"
    try:  # fill the disk to the last byte
        with filler.open("wb", buffering=0) as fh:
            while True:
                fh.write(b"\0" * 4096)
    except OSError:
        pass
    try:
        with filler.open("ab", buffering=0) as fh:
            while True:
                fh.write(b"\0")
    except OSError:
        pass
    assert os.statvfs(tiny_disk).f_bavail == 0
    second = subprocess.run(tune, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert second.returncode == 1
    last = second.stderr.strip().splitlines()[-1]
    assert last.startswith("aitune-fp: error: make: cannot write the run's files in ") and (
        "No space left on device" in last
    )
    assert (out / "run.json").read_bytes() == previous
    assert loads(previous.decode()).status == "complete"
    assert sorted(p.name for p in out.iterdir()) == ["report.md", "run.json"]
