"""A changed model never gets the old model's artifact from the cache: every hidden kind of
change (attribute, helper function, global, config object, hook, a library function patched
deep inside a call) and a swapped entry end as a fresh build computing the new model."""

from __future__ import annotations

import importlib.util
import shutil
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from returns.unsafe import unsafe_perform_io

from aitune_fp.effects.backends._shared_export import exports_folder, sharing
from aitune_fp.effects.backends.aot_inductor import AOTInductor
from aitune_fp.effects.backends.base import Backend, Built
from aitune_fp.effects.backends.ort import OnnxRuntime
from aitune_fp.effects.cache.artifact_cache import model_digest
from aitune_fp.effects.inputs.samples import Samples, normalise_samples
from tests.cache_builds import cached

CPU = torch.device("cpu")
SOURCE = """
import torch
import torch.nn.functional as F
from dataclasses import dataclass

OFFSET = {offset}


def helper(x):
    return x {op} 1.0


@dataclass
class Config:
    eps: float = 0.0


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.linear = torch.nn.Linear(4, 4)
        self.scale = 1.0
        self.cfg = Config()

    def forward(self, x):
        y = helper(self.linear(x)) * self.scale + OFFSET + self.cfg.eps
        return F.layer_norm(y, (4,)) + y
"""
NAME = "aitune_fp_stale_model_under_test"


def _model(folder: Path, offset: float = 0.0, op: str = "+") -> torch.nn.Module:
    """A fresh import of the model file, written with these constants, under one name."""
    path = folder / f"model_{offset}_{'plus' if op == '+' else 'minus'}.py"
    path.write_text(SOURCE.format(offset=offset, op=op))
    spec = importlib.util.spec_from_file_location(NAME, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[NAME] = module
    spec.loader.exec_module(module)
    model: torch.nn.Module = module.Model().eval()
    return model


def _samples() -> Samples:
    torch.manual_seed(1)
    return normalise_samples([torch.randn(2, 4)])


def _build(backend: Backend, model: torch.nn.Module, root: Path, tag: str) -> Built:
    work = root / f"work-{tag}"
    with sharing(exports_folder(work, root / "cache"), model_digest):
        effect = cached(backend, model, _samples(), CPU, work, root / "cache")
    built: Built = unsafe_perform_io(effect.unwrap())
    return built


def _outputs_match(built: Built, model: torch.nn.Module) -> bool:
    x = _samples().items[0].args[0]
    with torch.inference_mode():
        return bool(torch.allclose(built.runner(x), model(x), rtol=1e-4, atol=1e-5))


def _attribute(folder: Path) -> torch.nn.Module:
    model = _model(folder)
    model.scale = 3.0  # type: ignore[assignment]
    return model


def _helper(folder: Path) -> torch.nn.Module:
    return _model(folder, op="-")


def _global(folder: Path) -> torch.nn.Module:
    return _model(folder, offset=2.0)


def _config(folder: Path) -> torch.nn.Module:
    model = _model(folder)
    model.cfg.eps = 0.5  # type: ignore[union-attr]
    return model


def _hook(folder: Path) -> torch.nn.Module:
    model = _model(folder)
    model.register_forward_hook(lambda _m, _i, out: out * 2.0)
    return model


CHANGES: dict[str, Callable[[Path], torch.nn.Module]] = {
    "attribute": _attribute,
    "helper function": _helper,
    "global constant": _global,
    "config object": _config,
    "forward hook": _hook,
}


@pytest.fixture
def deep_patch() -> Iterator[None]:
    """``torch.layer_norm`` doubled: ``F.layer_norm`` calls it, ``forward`` never names it."""
    original = torch.layer_norm

    def doubled(*args: Any, **kwargs: Any) -> torch.Tensor:
        return original(*args, **kwargs) * 2.0

    torch.layer_norm = doubled  # type: ignore[assignment]
    try:
        yield
    finally:
        torch.layer_norm = original


@pytest.fixture(scope="module")
def primed_ort(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache holding the unchanged model's ONNX Runtime entry (built once for the module)."""
    root = tmp_path_factory.mktemp("stale-ort")
    built = _build(OnnxRuntime(), _model(root), root, "prime")
    assert built.info.get("cache") == "stored"
    built.close()
    return root


def _copy_cache(primed: Path, tmp_path: Path) -> Path:
    shutil.copytree(primed / "cache", tmp_path / "cache")
    return tmp_path


def test_the_unchanged_model_hits(primed_ort: Path, tmp_path: Path) -> None:
    """The same model, imported afresh, is served from the cache (the guard misses nothing
    it should not)."""
    root = _copy_cache(primed_ort, tmp_path)
    model = _model(root)
    built = _build(OnnxRuntime(), model, root, "again")
    assert built.info.get("cache") == "hit"
    assert _outputs_match(built, model)


@pytest.mark.parametrize("kind", sorted(CHANGES))
def test_a_hidden_change_is_never_served_the_old_artifact(
    primed_ort: Path, tmp_path: Path, kind: str
) -> None:
    """A model changed in a way ``repr`` and the class source cannot show gets a fresh
    ONNX Runtime build that computes the changed model."""
    root = _copy_cache(primed_ort, tmp_path)
    model = CHANGES[kind](root)
    built = _build(OnnxRuntime(), model, root, kind.replace(" ", "-"))
    assert built.info.get("cache") != "hit"
    assert _outputs_match(built, model)


def test_a_deep_library_patch_is_caught_by_the_probe(
    primed_ort: Path, tmp_path: Path, deep_patch: None
) -> None:
    """A library function patched where the key cannot see it (same key) fails the entry's
    behaviour probe and the shared export's check: the build is fresh and computes the
    patched model."""
    root = _copy_cache(primed_ort, tmp_path)
    model = _model(root)
    built = _build(OnnxRuntime(), model, root, "patched")
    assert built.info.get("cache") != "hit"
    assert _outputs_match(built, model)


def test_an_entry_copied_from_another_model_is_refused(primed_ort: Path, tmp_path: Path) -> None:
    """Another model's entry copied over this model's folder (seal intact) is discarded and
    rebuilt, never run as this model."""
    root = _copy_cache(primed_ort, tmp_path)
    other = _attribute(root)
    _build(OnnxRuntime(), other, root, "other").close()
    entries = root / "cache" / "artifacts"
    (mine_key,) = [p.name for p in entries.iterdir() if p.is_dir() and p.name in _keys(primed_ort)]
    (other_key,) = [p.name for p in entries.iterdir() if p.is_dir() and p.name != mine_key]
    shutil.rmtree(entries / mine_key)
    shutil.copytree(entries / other_key, entries / mine_key)
    model = _model(root)
    built = _build(OnnxRuntime(), model, root, "swapped")
    assert built.info.get("cache") != "hit"
    assert _outputs_match(built, model)


def _keys(primed: Path) -> set[str]:
    return {p.name for p in (primed / "cache" / "artifacts").iterdir() if p.is_dir()}


@pytest.mark.heavy
def test_aot_inductor_never_serves_a_stale_package(tmp_path: Path) -> None:
    """AOTInductor: an attribute change (the key) and a deep library patch (the probe) each
    get a fresh package computing the changed model; the unchanged model hits."""
    first = _build(AOTInductor(), _model(tmp_path), tmp_path, "prime")
    assert first.info.get("cache") == "stored"
    first.close()
    changed = _attribute(tmp_path)
    built = _build(AOTInductor(), changed, tmp_path, "attr")
    assert built.info.get("cache") != "hit" and _outputs_match(built, changed)
    original = torch.layer_norm
    torch.layer_norm = lambda *a, **k: original(*a, **k) * 2.0  # type: ignore[assignment]
    try:
        model = _model(tmp_path)
        patched = _build(AOTInductor(), model, tmp_path, "patched")
        assert patched.info.get("cache") != "hit" and _outputs_match(patched, model)
    finally:
        torch.layer_norm = original
    again = _model(tmp_path)
    assert _outputs_match(_build(AOTInductor(), again, tmp_path, "again"), again)


def test_fixture_module_is_a_real_module(tmp_path: Path) -> None:
    """The model file really imports under one fixed name each time (the premise above)."""
    _model(tmp_path)
    assert isinstance(sys.modules[NAME], types.ModuleType)


def test_the_key_sees_the_batch_envelope() -> None:
    """An artifact exported inside a one-row envelope (a static batch) is keyed apart from
    one exported for a larger envelope, so neither is served for the other."""
    from aitune_fp.effects.backends._export import batch_envelope
    from aitune_fp.effects.cache.artifact_cache import cache_key

    model, samples, backend = torch.nn.Linear(4, 4), _samples(), OnnxRuntime()
    with batch_envelope(1):
        one = cache_key(model, samples, backend, CPU)
    with batch_envelope(64):
        many = cache_key(model, samples, backend, CPU)
    assert len({one, many, cache_key(model, samples, backend, CPU)}) == 3
