"""Shadowed onnxruntime-gpu: which ONNX Runtime build really holds the package, from metadata.

The fake site folders mirror what pip leaves when both wheels are installed: one
``onnxruntime/`` folder, two ``*.dist-info`` folders whose RECORDs list the same native
extension path with their own size and sha256, the file on disk being the last writer's.
"""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from aitune_fp.effects.backends import _ort_install
from aitune_fp.effects.backends._ort_install import ort_install, shadow_reason
from aitune_fp.effects.machine.environment import environment_fingerprint, onnxruntime_facts

EXTENSION = "onnxruntime/capi/onnxruntime_pybind11_state.so"


def _record_hash(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _install(site: Path, name: str, version: str, extension: bytes, *, on_disk: bool) -> None:
    """Write a dist-info for ``name`` whose RECORD lists ``extension``; write the file too
    when this wheel is the one installed last."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    rows = [
        f"{EXTENSION},sha256={_record_hash(extension)},{len(extension)}",
        f"{info.name}/METADATA,,",
        f"{info.name}/RECORD,,",
    ]
    (info / "RECORD").write_text("\n".join(rows) + "\n")
    if on_disk:
        target = site / EXTENSION
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(extension)


@pytest.mark.parametrize("gpu_size", [64, 32], ids=["sizes differ", "sizes tie"])
def test_cpu_build_installed_last_shadows_the_gpu_build(tmp_path: Path, gpu_size: int) -> None:
    """With both wheels installed and the CPU one last, the CPU build is active, the GPU
    build is shadowed and the reason names both versions and the fix (by size, or by
    sha256 when the sizes tie)."""
    _install(tmp_path, "onnxruntime-gpu", "1.31.1", b"g" * gpu_size, on_disk=False)
    _install(tmp_path, "onnxruntime", "1.32.0", b"c" * 32, on_disk=True)
    install = ort_install(path=[str(tmp_path)])
    assert install.installed == (("onnxruntime", "1.32.0"), ("onnxruntime-gpu", "1.31.1"))
    assert (install.active, install.version, install.shadowed) == (
        "onnxruntime",
        "1.32.0",
        ("onnxruntime-gpu",),
    )
    reason = shadow_reason(install)
    assert reason is not None
    assert reason.startswith("onnxruntime-gpu 1.31.1 is shadowed by onnxruntime 1.32.0")
    assert "pip uninstall -y onnxruntime onnxruntime-gpu && pip install onnxruntime-gpu" in reason


def test_gpu_build_installed_last_is_active_and_not_shadowed(tmp_path: Path) -> None:
    """When the GPU wheel won, it is the active build with its own version and no reason."""
    _install(tmp_path, "onnxruntime", "1.32.0", b"c" * 32, on_disk=False)
    _install(tmp_path, "onnxruntime-gpu", "1.31.1", b"g" * 64, on_disk=True)
    install = ort_install(path=[str(tmp_path)])
    assert (install.active, install.version) == ("onnxruntime-gpu", "1.31.1")
    assert shadow_reason(install) is None


def test_a_single_build_is_active_without_reading_files(tmp_path: Path) -> None:
    """One installed distribution is the active one; nothing is shadowed."""
    _install(tmp_path, "onnxruntime-gpu", "1.31.1", b"g", on_disk=False)
    install = ort_install(path=[str(tmp_path)])
    assert (install.active, install.shadowed, shadow_reason(install)) == (
        "onnxruntime-gpu",
        (),
        None,
    )


def test_undecidable_pair_still_says_both_builds_are_installed(tmp_path: Path) -> None:
    """If neither RECORD matches the file on disk, the GPU build is still reported as at risk."""
    _install(tmp_path, "onnxruntime", "1.32.0", b"c" * 32, on_disk=False)
    _install(tmp_path, "onnxruntime-gpu", "1.31.1", b"g" * 64, on_disk=False)
    (tmp_path / EXTENSION).parent.mkdir(parents=True)
    (tmp_path / EXTENSION).write_bytes(b"x" * 48)
    install = ort_install(path=[str(tmp_path)])
    assert install.active is None
    reason = shadow_reason(install)
    assert reason is not None and "installed together with onnxruntime" in reason


def test_fingerprint_records_the_active_build_version_and_the_shadowing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fingerprint's onnxruntime version is the active build's (not the first found),
    and it lists every build and the shadowing reason."""
    _install(tmp_path, "onnxruntime-gpu", "1.31.1", b"g" * 64, on_disk=False)
    _install(tmp_path, "onnxruntime", "1.32.0", b"c" * 32, on_disk=True)
    real = _ort_install.ort_install
    monkeypatch.setattr(
        "aitune_fp.effects.machine.environment.ort_install", lambda: real(path=[str(tmp_path)])
    )
    facts = environment_fingerprint("cpu")
    assert facts["onnxruntime"] == "1.32.0"
    assert facts["onnxruntime_build"] == "onnxruntime"
    assert facts["onnxruntime_builds"] == {"onnxruntime": "1.32.0", "onnxruntime-gpu": "1.31.1"}
    assert str(facts["onnxruntime_shadowed"]).startswith("onnxruntime-gpu 1.31.1 is shadowed")
    assert json.loads(json.dumps(facts)) == facts


def test_this_machine_has_no_shadowing_and_imports_no_sdk() -> None:
    """Here (CPU build only) nothing is shadowed, and asking imports no onnxruntime."""
    code = (
        "import sys, json; from aitune_fp.effects.machine.environment import onnxruntime_facts; "
        "f = onnxruntime_facts(); print(json.dumps([f['onnxruntime_shadowed'], "
        "'onnxruntime' in sys.modules]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [None, False]
    assert onnxruntime_facts()["onnxruntime_shadowed"] is None
