"""The artifact cache: identical rebuilds reuse the artifact; anything corrupt is rebuilt."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pytest
import torch
from returns.io import IOResult, IOSuccess
from returns.unsafe import unsafe_perform_io

from aitune_fp.core.records import BackendFailure
from aitune_fp.effects.backends.base import Built, ConfigIdentity, Declaration
from aitune_fp.effects.cache.artifact_cache import cache_key, weights_digest
from aitune_fp.effects.inputs.samples import InputSpec, Samples, normalise_samples
from tests.cache_builds import cached
from tests.shell.fakes import FakeBackend


@dataclass(frozen=True, slots=True)
class ScaleFile(ConfigIdentity):
    """A loadable fake: its artifact is a text file holding a factor the runner applies."""

    factor: float = 2.0
    name: str = field(default="scale_file", init=False)
    declaration: ClassVar[Declaration] = Declaration(
        loader=lambda config, r: config.load(r.artifact, r.spec, r.outputs, r.device, r.work_dir)
    )
    builds: ClassVar[list[str]] = []

    def unavailable_reason(self, device: torch.device) -> str | None:
        """Always available."""
        return None

    def build(
        self, module: torch.nn.Module, samples: Samples, device: torch.device, work_dir: Path
    ) -> IOResult[Built, BackendFailure]:
        """Write the factor to ``work_dir/factor.txt`` and count the build."""
        ScaleFile.builds.append(self.describe())
        work_dir.mkdir(parents=True, exist_ok=True)
        path = work_dir / "factor.txt"
        path.write_text(repr(self.factor))
        return IOSuccess(Built(lambda x: x * self.factor, artifact=path, info={"built": True}))

    def load(
        self, artifact: Path, spec: InputSpec, outputs: Any, device: torch.device, work_dir: Path
    ) -> Built:
        """Read the factor back from the artifact."""
        factor = float(artifact.read_text())
        return Built(lambda x: x * factor, artifact=artifact)


CPU = torch.device("cpu")


@pytest.fixture(autouse=True)
def _reset_builds() -> None:
    ScaleFile.builds.clear()


def _module(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Linear(3, 2).eval()


def _samples() -> Samples:
    return normalise_samples([torch.ones(1, 3)])


def _build(tmp_path: Path, backend: Any = None, module: Any = None) -> Built:
    effect = cached(
        backend or ScaleFile(),
        module or _module(),
        _samples(),
        CPU,
        tmp_path / "work",
        tmp_path / "cache",
    )
    built: Built = unsafe_perform_io(effect.unwrap())
    return built


def _entry(tmp_path: Path) -> Path:
    (entry,) = (tmp_path / "cache" / "artifacts").iterdir()
    return entry


def test_second_identical_build_is_a_hit_and_does_not_build(tmp_path: Path) -> None:
    """The same module, inputs, config and device reuse the stored artifact."""
    first = _build(tmp_path)
    second = _build(tmp_path)
    assert first.info["cache"] == "stored" and second.info["cache"] == "hit"
    assert ScaleFile.builds == ["scale_file"]
    x = torch.ones(1, 3)
    assert torch.equal(second.runner(x), first.runner(x))


def test_other_weights_or_config_miss(tmp_path: Path) -> None:
    """Different weights or a different config never reuse another build's artifact."""
    _build(tmp_path)
    other_weights = _build(tmp_path, module=_module(seed=1))
    other_config = _build(tmp_path, backend=ScaleFile(factor=3.0))
    assert other_weights.info["cache"] == "stored" and other_config.info["cache"] == "stored"
    assert len(ScaleFile.builds) == 3
    assert other_config.runner(torch.ones(1)).item() == 3.0


@pytest.mark.parametrize("damage", ["flip", "truncate", "delete", "entry"])
def test_a_corrupt_entry_is_rebuilt_never_trusted(
    damage: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A flipped byte, a truncated or missing file, or a broken entry.json means a rebuild."""
    _build(tmp_path)
    entry = _entry(tmp_path)
    artifact = entry / "factor.txt"
    if damage == "flip":
        artifact.write_text("9.0")  # same size, other content
    elif damage == "truncate":
        artifact.write_text("2")
    elif damage == "delete":
        artifact.unlink()
    else:
        (entry / "entry.json").write_text("{not json")
    with caplog.at_level(logging.WARNING, logger="aitune_fp"):
        rebuilt = _build(tmp_path)
    assert rebuilt.info["cache"] == "stored"
    assert len(ScaleFile.builds) == 2
    assert rebuilt.runner(torch.ones(1)).item() == 2.0
    assert "discarding entry" in caplog.text
    assert _build(tmp_path).info["cache"] == "hit"


def test_without_a_cache_dir_or_a_loadable_artifact_it_just_builds(tmp_path: Path) -> None:
    """cache_dir=None and backends without loadable artifacts always build, storing nothing."""
    for _ in range(2):
        effect = cached(ScaleFile(), _module(), _samples(), CPU, tmp_path / "w", None)
        assert "cache" not in unsafe_perform_io(effect.unwrap()).info
    assert len(ScaleFile.builds) == 2
    built = _build(tmp_path, backend=FakeBackend())
    assert "cache" not in built.info
    assert not (tmp_path / "cache" / "artifacts").exists()


def test_key_depends_on_every_part(tmp_path: Path) -> None:
    """The key is stable and changes with weights, inputs, config and device facts."""
    m, s = _module(), _samples()
    base = cache_key(m, s, ScaleFile(), CPU)
    assert cache_key(m, s, ScaleFile(), CPU) == base
    assert cache_key(_module(1), s, ScaleFile(), CPU) != base
    assert cache_key(m, normalise_samples([torch.ones(1, 3, 1)]), ScaleFile(), CPU) != base
    assert cache_key(m, s, ScaleFile(factor=1.0), CPU) != base


def test_weights_digest_sees_a_single_changed_value() -> None:
    """Changing one weight changes the digest; equal weights give equal digests."""
    a, b = _module(), _module()
    assert weights_digest(a) == weights_digest(b)
    with torch.no_grad():
        b.weight[0, 0] += 1e-3
    assert weights_digest(a) != weights_digest(b)


@pytest.mark.heavy
def test_onnxruntime_rebuild_is_served_from_the_cache(tmp_path: Path) -> None:
    """A real ONNX Runtime build is stored, then reused with identical outputs."""
    from aitune_fp.effects.backends.ort import OnnxRuntime

    module, samples = _module(), _samples()
    first = unsafe_perform_io(
        cached(OnnxRuntime(), module, samples, CPU, tmp_path / "w1", tmp_path / "c").unwrap()
    )
    second = unsafe_perform_io(
        cached(OnnxRuntime(), module, samples, CPU, tmp_path / "w2", tmp_path / "c").unwrap()
    )
    assert first.info["cache"] == "stored" and second.info["cache"] == "hit"
    x = torch.randn(5, 3)
    assert torch.allclose(second.runner(x), module(x), atol=1e-5)


@pytest.mark.heavy
def test_build_parts_are_timed_export_and_compile_only_when_they_ran(tmp_path: Path) -> None:
    """A fresh ONNX Runtime build times export, compile and cache; a cache hit times only
    the cache (no export, no compile ran)."""
    from aitune_fp.effects.backends.ort import OnnxRuntime

    module, samples = _module(), _samples()
    first = unsafe_perform_io(
        cached(OnnxRuntime(), module, samples, CPU, tmp_path / "w1", tmp_path / "c").unwrap()
    )
    second = unsafe_perform_io(
        cached(OnnxRuntime(), module, samples, CPU, tmp_path / "w2", tmp_path / "c").unwrap()
    )
    assert set(first.info["stage_seconds"]) == {"export", "compile", "cache"}
    assert all(v > 0 for v in first.info["stage_seconds"].values())
    assert set(second.info["stage_seconds"]) == {"cache"}
