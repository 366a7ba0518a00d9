"""A changed model is refused by ``load(module=...)`` and by ``--reuse-baseline``: every hidden
kind of change (attribute, helper function, global, config object, hook) and, for a loaded
artifact, a library function patched deep inside the call."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import torch

import aitune_fp
from aitune_fp.core.records import BackendProfilingResult, Selection
from aitune_fp.effects.backends.base import Built
from aitune_fp.effects.backends.ort import OnnxRuntime
from aitune_fp.effects.inputs.samples import normalise_samples
from aitune_fp.shell.persist import LoadError
from aitune_fp.shell.tuned_module import TunedModule
from tests.effects.test_stale_models import CHANGES, _model
from tests.shell.test_baseline_reuse import _tune
from tests.shell.test_persist import _write_onnx


def _saved(tmp_path: Path) -> Path:
    """An ONNX Runtime winner tuned from the unchanged model, saved with its source."""
    artifact = tmp_path / "build" / "model.onnx"
    artifact.parent.mkdir()
    _write_onnx(artifact)
    source = _model(tmp_path)
    built = Built(source, artifact=artifact, info={"device": "cpu"})
    selection = Selection("onnxruntime", BackendProfilingResult(100.0, 2, 20.0, 100.0), False)
    samples = normalise_samples([torch.randn(2, 4)])
    tuned = TunedModule(built, OnnxRuntime(), selection, samples, source=source)
    return aitune_fp.save(tuned, tmp_path / "saved")


def test_load_accepts_the_same_model_imported_afresh(tmp_path: Path) -> None:
    """The model the save was tuned from, imported again, loads (and the folder keeps a
    sealed behaviour probe)."""
    folder = _saved(tmp_path)
    assert (folder / "probe.pt").is_file()
    loaded = aitune_fp.load(folder, module=_model(tmp_path))
    loaded.close()


@pytest.mark.parametrize("kind", sorted(CHANGES))
def test_load_refuses_a_model_changed_in_a_hidden_way(tmp_path: Path, kind: str) -> None:
    """``load(path, module=changed)`` is a LoadError saying the module is not the tuned one."""
    folder = _saved(tmp_path)
    with pytest.raises(LoadError, match="is not the one"):
        aitune_fp.load(folder, module=CHANGES[kind](tmp_path))


@pytest.fixture
def saved_unpatched(tmp_path: Path) -> Path:
    """A save made before any patch is applied."""
    return _saved(tmp_path)


def test_the_probe_refuses_a_deep_patch(saved_unpatched: Path, tmp_path: Path) -> None:
    """Saved from the unpatched model, loaded with ``torch.layer_norm`` patched: refused by
    the behaviour probe (the digests are equal)."""
    original = torch.layer_norm
    torch.layer_norm = lambda *a, **k: original(*a, **k) * 2.0  # type: ignore[assignment]
    try:
        with pytest.raises(LoadError, match="computes something else"):
            aitune_fp.load(saved_unpatched, module=_model(tmp_path))
    finally:
        torch.layer_norm = original


@pytest.mark.parametrize("kind", sorted(CHANGES))
def test_reuse_baseline_refuses_a_model_changed_in_a_hidden_way(
    tmp_path: Path, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A baseline recorded for the unchanged model is not reused for a changed one: the
    record says the model differs and eager is profiled again."""
    first = _tune(tmp_path, _model(tmp_path), record_path=tmp_path / "first.json")
    with caplog.at_level(logging.WARNING, logger="aitune_fp"):
        run = _tune(tmp_path, CHANGES[kind](tmp_path), reuse_baseline=tmp_path / "first.json")
    assert run.record.provenance.baseline_reused_from is None
    assert "its model differs" in (run.record.provenance.baseline_refused or "")
    assert first.record.baseline is not None and run.record.baseline is not None
    assert "profile" in run.record.baseline.stage_seconds
