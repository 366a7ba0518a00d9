"""The OpenVINO backend (issue 35): an IR built from the ONNX export, compiled for the CPU
with its precision and performance hints as runtime options; cached, saved and loaded
without the model's code, exported to Triton's openvino backend. One build is shared."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from returns.io import IOFailure
from returns.unsafe import unsafe_perform_io
from torch import nn

import aitune_fp
from aitune_fp.effects.backends._runtime_fields import artifact_key
from aitune_fp.effects.backends.openvino import OpenVino
from aitune_fp.effects.cache.artifacts import artifact_files
from aitune_fp.effects.checks.validate import validate
from aitune_fp.effects.inputs.samples import normalise_samples
from aitune_fp.effects.machine.capabilities import NEEDS_BF16, skip_unless

pytest.importorskip("openvino")
CPU = torch.device("cpu")
ROOT = Path(__file__).resolve().parents[2]


class SeqPool(nn.Module):
    """Mean over a dynamic sequence axis, then a linear layer: ``(b, s, 8) -> (b, 4)``."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.fc = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Pooled logits."""
        return self.fc(torch.relu(x).mean(dim=1))  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any, Any]:
    """One OpenVINO build of SeqPool, samples of lengths 6 and 10 (a dynamic axis)."""
    module = SeqPool().eval()
    samples = normalise_samples([torch.randn(2, 6, 8), torch.randn(3, 10, 8)])
    result = OpenVino().build(module, samples, CPU, tmp_path_factory.mktemp("ov"))
    return module, samples, unsafe_perform_io(result.unwrap())


@pytest.mark.heavy
def test_the_ir_runs_every_batch_and_length_of_the_envelope(built: Any) -> None:
    """Validated at batch 1 and 16 within the float32 bound, and at an unseen length the
    IR (dynamic batch and sequence) matches eager; its artifact is the IR and its weights."""
    module, samples, ov = built
    report = unsafe_perform_io(
        validate("openvino", ov, module, samples, CPU, batch_sizes=(1, 16)).unwrap()
    )
    assert report.max_abs_error < 1e-4
    x = torch.randn(5, 8, 8)
    torch.testing.assert_close(ov.runner(x), module(x), rtol=1e-4, atol=1e-5)
    assert [p.name for p in artifact_files(ov.artifact)] == ["model.xml", "model.xml.bin"]


@pytest.mark.heavy
@skip_unless(NEEDS_BF16)
def test_the_bf16_hint_computes_in_bfloat16_and_shares_the_ir(built: Any) -> None:
    """The bf16 hint compiles the same IR (the hints are runtime options, one cache key),
    reports bfloat16, computes in it (its outputs leave the float32 run's by more than
    float32 rounding, within bfloat16's reach of eager: an fp32 run fails) and passes the
    accuracy policy on this module."""
    module, samples, ov = built
    if OpenVino(precision="bfloat16").unavailable_reason(CPU) is not None:
        pytest.skip(NEEDS_BF16)
    assert artifact_key(OpenVino(precision="bfloat16")) == artifact_key(OpenVino())
    from aitune_fp.effects.backends._export import eager_layout
    from aitune_fp.effects.backends._onnx import saved_graph
    from aitune_fp.effects.inputs.samples import make_batch

    graph = saved_graph(
        ov.artifact, samples.spec, eager_layout(module, make_batch(samples, 1)).treespec
    )
    bf16 = OpenVino(precision="bfloat16").compiled(graph, samples.spec)
    assert bf16.info["precision"] == "bfloat16" and "bfloat16" in bf16.info["inference_precision"]
    checked = validate("openvino-bf16", bf16, module, samples, CPU, batch_sizes=(1, 16))
    assert not isinstance(checked, IOFailure), checked
    x = 10 * torch.randn(16, 10, 8, generator=torch.Generator().manual_seed(1))
    fp32, half = ov.runner(x), bf16.runner(x)
    assert (half - fp32).abs().max() > 100 * (fp32 - module(x)).abs().max().clamp(min=1e-7)
    torch.testing.assert_close(half, module(x), rtol=5e-2, atol=5e-2)


def test_unavailable_off_the_cpu_and_without_native_bf16(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a CUDA device it is unavailable with the reason; bf16 where oneDNN reports no
    native bfloat16 is unavailable saying it would be emulated."""
    assert "CPU" in (OpenVino().unavailable_reason(torch.device("cuda")) or "")
    monkeypatch.setattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", lambda: False)
    reason = OpenVino(precision="bfloat16").unavailable_reason(CPU) or ""
    assert "no native bfloat16" in reason and "emulated" in reason
    assert OpenVino().unavailable_reason(CPU) is None


@pytest.mark.heavy
def test_a_tuned_openvino_pick_saves_loads_in_a_fresh_process_and_exports_to_triton(
    tmp_path: Path,
) -> None:
    """Tuned with only OpenVINO (no eager baseline), the pick saves; a fresh process that never
    saw the model's code loads it and computes as tuned; the Triton export writes
    model.xml and model.bin and a config that Triton's schema parses as the openvino
    backend."""
    from aitune_fp.shell.io import perform

    module = SeqPool().eval()
    samples = [torch.randn(2, 6, 8), torch.randn(3, 10, 8)]
    strategy = dataclasses.replace(
        aitune_fp.one_backend(aitune_fp.min_latency, "openvino"), validate_performance=False
    )
    tuned = perform(aitune_fp.tune_module(module, samples, strategy, ["openvino"],
                                          cache_dir=tmp_path / "c", max_batch_size=4,
                                          verify_seconds=0.2)).unwrap()  # fmt: skip
    assert tuned.backend == "openvino"
    saved = aitune_fp.save(tuned, tmp_path / "saved")
    x = torch.randn(1, 7, 8)  # min-latency tunes batch 1; length 7 is inside 6..10
    torch.save({"x": x, "y": tuned(x)}, tmp_path / "io.pt")
    code = (
        "import sys, torch, aitune_fp; io = torch.load(sys.argv[2]);"
        "m = aitune_fp.load(sys.argv[1]); torch.testing.assert_close(m(io['x']), io['y'],"
        " rtol=1e-5, atol=1e-6); print(m.backend)"
    )
    done = subprocess.run([sys.executable, "-c", code, str(saved), str(tmp_path / "io.pt")],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0 and done.stdout.strip() == "openvino", done.stderr[-2000:]
    pytest.importorskip("tritonclient.grpc.model_config_pb2")
    from aitune_fp.shell.serving.triton_export import export_triton, parse_config

    target = export_triton(saved, tmp_path / "repo", name="pool")
    config = parse_config((target / "config.pbtxt").read_text())
    assert config.backend == "openvino" and config.default_model_filename == "model.xml"
    assert sorted(p.name for p in (target / "1").iterdir()) == ["model.bin", "model.xml"]
    tuned.close()


def test_outside_its_file_openvino_is_named_only_where_a_table_must_name_it() -> None:
    """No module of the package names OpenVINO in its code (docstrings and doctests aside)
    besides its own backend file, generation's own OpenVINO stepper file, the tables that must
    name it (the CLI's head-start table, kept equal to the declarations by
    tests/cli/test_head_start.py; generation's step kinds, candidates, memory factors and
    CPU-only families), Triton's name for its openvino backend and ONNX Runtime's own
    ``onnxruntime-openvino`` build."""
    allowed = {
        "aitune_fp/effects/backends/openvino.py",
        "aitune_fp/cli/head_start.py",
        "aitune_fp/core/serving/triton.py",
        "aitune_fp/effects/backends/_ort_install.py",  # the onnxruntime-openvino distribution
        "aitune_fp/effects/backends/ort.py",  # the same, among ORT's distributions
        "aitune_fp/effects/generation/openvino_steps.py",  # generation's OpenVINO stepper
        "aitune_fp/core/generation/candidate.py",  # the step kinds
        "aitune_fp/shell/generation/candidates.py",  # the candidate table
        "aitune_fp/core/generation/build_policy.py",  # the memory factors
        "aitune_fp/effects/generation/devices.py",  # the CPU-only families
    }
    docstrings = re.compile(r'"""(?:.|\n)*?"""')
    naming = {
        str(p.relative_to(ROOT))
        for p in (ROOT / "aitune_fp").rglob("*.py")
        if "openvino" in docstrings.sub("", p.read_text()).lower()
    }
    assert naming <= allowed, naming - allowed
