"""The optional-dependency extras in pyproject.toml: installable sets, never both ONNX Runtimes."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from aitune_fp.effects.backends._versions import range_text, supported_ranges
from aitune_fp.effects.backends.registry import shipped

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
ORT_BUILDS = {"onnxruntime", "onnxruntime-gpu"}


def _extras() -> dict[str, list[str]]:
    extras: dict[str, list[str]] = tomllib.loads(PYPROJECT.read_text())["project"][
        "optional-dependencies"
    ]
    return extras


def _name(requirement: str) -> str:
    return re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _closure(extra: str, extras: dict[str, list[str]]) -> set[str]:
    """Every distribution an extra pulls, following ``aitune_fp[...]`` self-references."""
    names: set[str] = set()
    for requirement in extras[extra]:
        inner = re.fullmatch(r"aitune_fp\[([^\]]+)\]", requirement.replace(" ", ""))
        if inner:
            for part in inner.group(1).split(","):
                names |= _closure(part, extras)
        else:
            names.add(_name(requirement))
    return names


@pytest.mark.parametrize("extra", sorted(_extras()))
def test_no_extra_pulls_both_onnxruntime_builds(extra: str) -> None:
    """No extra, with everything it includes, holds both onnxruntime and onnxruntime-gpu."""
    assert len(_closure(extra, _extras()) & ORT_BUILDS) <= 1


def test_each_onnxruntime_build_has_its_own_extra_and_test_stays_cpu() -> None:
    """`onnx` is the CPU build, `ort-gpu` the GPU build alone, `test` installs on a CPU
    machine (CPU build, no TensorRT), and `test-gpu` is its GPU counterpart."""
    extras = _extras()
    assert _closure("onnx", extras) & ORT_BUILDS == {"onnxruntime"}
    assert _closure("ort-gpu", extras) & ORT_BUILDS == {"onnxruntime-gpu"}
    assert not _closure("ort-gpu", extras) & {"tensorrt", "torch-tensorrt"}
    test = _closure("test", extras)
    assert "onnxruntime" in test and not test & {"onnxruntime-gpu", "tensorrt", "torch-tensorrt"}
    assert _closure("test-gpu", extras) & ORT_BUILDS == {"onnxruntime-gpu"}


@pytest.mark.parametrize(
    ("extra", "distribution", "library"),
    [("tensorrt", "tensorrt", "tensorrt"), ("torch-tensorrt", "torch-tensorrt", "torch_tensorrt")],
)
def test_gpu_extras_pin_the_supported_ranges(extra: str, distribution: str, library: str) -> None:
    """The TensorRT and Torch-TensorRT extras ask for exactly the range the code supports."""
    wanted = f"{distribution}{range_text(library)}"
    assert wanted in _extras()[extra], (_extras()[extra], supported_ranges()[library])


def test_install_docs_give_the_extra_index_for_tensorrt() -> None:
    """docs/gpu.md names NVIDIA's index for the TensorRT extras and warns against both ORTs."""
    text = (PYPROJECT.parent / "docs" / "gpu.md").read_text()
    assert "--extra-index-url https://pypi.nvidia.com" in text
    assert '"aitune_fp[ort-gpu' in text and "never both" in text


def test_every_declared_extra_exists_and_installs_its_sdk() -> None:
    """Each backend's declared extra is an extra of pyproject.toml, and it installs the
    distribution of every library the backend declares a supported range for."""
    extras = _extras()
    declared = [cls.declaration for cls in shipped() if cls.declaration.extra is not None]
    assert declared
    for declaration in declared:
        assert declaration.extra in extras, declaration.extra
        pulled = _closure(str(declaration.extra), extras)
        for library in declaration.versions:
            if library.supported is not None:
                names = {_name(d) for d in library.distributions}
                assert pulled & names, (declaration.extra, library.name)


def test_the_gpu_extra_pins_the_tensorrt_major_onnx_runtime_links() -> None:
    """`[gpu]` holds onnxruntime-gpu and TensorRT together, so its TensorRT is the major the
    TensorRT EP dlopens (libnvinfer.so.10), never TensorRT 11 (issue 37 §6)."""
    from aitune_fp.effects.backends._ort_install import ORT_TENSORRT_LIBRARY

    major = int(ORT_TENSORRT_LIBRARY.rsplit(".", 1)[1])
    pins = [r for r in _extras()["gpu"] if _name(r) == "tensorrt"]
    assert pins == [f"tensorrt>={major}.0,<{major + 1}"]
    assert "onnxruntime-gpu" in _closure("gpu", _extras())
