"""One ONNX translation per shared program, reused by the other ONNX backends of the run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from aitune_fp.effects.backends._build_guard import BuildLog
from aitune_fp.effects.backends._onnx import OnnxGraph, export_onnx
from aitune_fp.effects.backends._shared_export import sharing
from aitune_fp.effects.cache.artifact_cache import model_digest
from aitune_fp.effects.inputs.samples import Samples, normalise_samples

CPU = torch.device("cpu")


@pytest.fixture
def translations(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the ONNX translations (``torch.onnx.export`` calls) made in this process."""
    calls: list[int] = []
    real = torch.onnx.export

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(torch.onnx, "export", counted)
    return calls


def _mlp_and_samples() -> tuple[nn.Module, Samples]:
    torch.manual_seed(0)
    module = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).eval()
    return module, normalise_samples([torch.randn(2, 4), torch.randn(2, 4)])


def _onnx(folder: Path | None, work: Path) -> tuple[OnnxGraph, str]:
    """One backend's export into ``work``, sharing through ``folder``; the graph and log."""
    module, samples = _mlp_and_samples()
    log = BuildLog()
    work.mkdir(parents=True, exist_ok=True)
    with sharing(folder, model_digest):
        graph = export_onnx(module, samples, CPU, work / "model.onnx", log)
    return graph, log.text()


def _runs_like_the_module(path: Path) -> None:
    import onnxruntime as ort

    module, _ = _mlp_and_samples()
    x = torch.randn(5, 4)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (got,) = session.run(None, {"input_0": x.numpy()})
    torch.testing.assert_close(torch.from_numpy(got), module(x).detach())


def test_the_second_backend_copies_the_first_ones_translation(
    tmp_path: Path, translations: list[int]
) -> None:
    """With a shared folder open, the first export translates and stores its graph; the
    second copies it into its own folder (no second translation) and it runs as the module."""
    first, log1 = _onnx(tmp_path / "exports", tmp_path / "a")
    second, log2 = _onnx(tmp_path / "exports", tmp_path / "b")
    assert len(translations) == 1
    assert "onnx: fresh, translation stored" in log1 and "onnx: shared" in log2
    assert second.path == tmp_path / "b" / "model.onnx"
    assert second.path.read_bytes() == first.path.read_bytes()
    _runs_like_the_module(second.path)


def test_a_damaged_translation_is_translated_again_never_trusted(
    tmp_path: Path, translations: list[int]
) -> None:
    """A stored graph altered after it was sealed is discarded and translated afresh, and
    the build goes on with a graph that runs as the module."""
    _onnx(tmp_path / "exports", tmp_path / "a")
    (entry,) = (p for p in (tmp_path / "exports").glob("*.onnx-*") if p.is_dir())
    (entry / "model.onnx").write_bytes(b"not a graph")
    graph, log = _onnx(tmp_path / "exports", tmp_path / "b")
    assert len(translations) == 2 and "discarding the shared translation" in log
    _runs_like_the_module(graph.path)
    (again,) = (p for p in (tmp_path / "exports").glob("*.onnx-*") if p.is_dir())
    assert (again / "model.onnx").read_bytes() == graph.path.read_bytes()


def test_without_a_shared_folder_every_backend_translates_alone(
    tmp_path: Path, translations: list[int]
) -> None:
    """With no shared folder open each export translates for itself and stores nothing."""
    _onnx(None, tmp_path / "a")
    _onnx(None, tmp_path / "b")
    assert len(translations) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]


def test_two_backends_built_at_once_translate_once(tmp_path: Path) -> None:
    """Two translations of the same program asked at once (two build lanes) run once: the
    second waits on the entry's lock, then copies the first's graph."""
    import threading
    import time

    from aitune_fp.effects.backends._shared_export import SharedProgram
    from aitune_fp.effects.backends._shared_onnx import shared_translation

    made: list[Path] = []
    said: dict[str, str] = {}

    def lane(work: Path) -> None:
        work.mkdir()
        path = work / "model.onnx"

        def translate() -> None:
            made.append(path)
            time.sleep(0.3)  # a translation takes a while; the other lane asks meanwhile
            path.write_bytes(b"graph")

        with sharing(tmp_path / "exports", model_digest):
            program = SharedProgram("k", "sha")
            said[work.name] = shared_translation(program, "f", path, translate, BuildLog())

    lanes = [threading.Thread(target=lane, args=(tmp_path / n,)) for n in ("a", "b")]
    for thread in lanes:
        thread.start()
    for thread in lanes:
        thread.join(timeout=60)
    assert len(made) == 1 and sorted(said.values()) == ["fresh", "shared"]
    assert (tmp_path / "a" / "model.onnx").read_bytes() == b"graph"
    assert (tmp_path / "b" / "model.onnx").read_bytes() == b"graph"


def test_a_translation_of_another_program_under_the_same_key_is_not_reused(
    tmp_path: Path,
) -> None:
    """A program stored again under the same key (the old one discarded: it computed
    something else) gets a translation of its own; the old program's is never copied."""
    from aitune_fp.effects.backends._shared_export import SharedProgram
    from aitune_fp.effects.backends._shared_onnx import shared_translation

    def one(work: Path, sha: str, graph: bytes) -> tuple[str, bytes]:
        work.mkdir()
        path = work / "model.onnx"

        def translate() -> None:
            path.write_bytes(graph)

        with sharing(tmp_path / "exports", model_digest):
            said = shared_translation(SharedProgram("k", sha), "f", path, translate, BuildLog())
        return said, path.read_bytes()

    assert one(tmp_path / "a", "old", b"old graph") == ("fresh", b"old graph")
    assert one(tmp_path / "b", "new", b"new graph") == ("fresh", b"new graph")
    assert one(tmp_path / "c", "new", b"unused") == ("shared", b"new graph")
