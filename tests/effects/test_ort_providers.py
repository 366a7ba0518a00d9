"""No silent provider fallback: a session runs on the providers asked for or the build fails.

Run against the real (CPU) onnxruntime installed here, plus one fake that mirrors
onnxruntime 1.31's ``InferenceSession`` when an execution provider library fails to load
(with ``enable_fallback=0`` it raises; its native logger has written the reason to fd 2).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from aitune_fp.effects.backends._ort_session import (
    ProviderMismatch,
    open_checked_session,
    reason_lines,
)

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")


@pytest.fixture
def identity_model(tmp_path: Path) -> str:
    """A one-node ONNX model (Identity on a float vector), written without torch."""
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "identity.onnx"
    onnx.save(model, str(path))
    return str(path)


def test_cuda_provider_on_the_cpu_build_is_a_failure_naming_asked_ran_and_why(
    identity_model: str,
) -> None:
    """Asking the CPU onnxruntime for CUDA fails, naming the request, the CPU provider it
    would have run on and onnxruntime's own warning, instead of running on CPU quietly."""
    if "CUDAExecutionProvider" in ort.get_available_providers():
        pytest.skip("needs a CPU-only ONNX Runtime: this one has the CUDA provider")
    heard: list[str] = []
    with pytest.raises(ProviderMismatch) as raised:
        open_checked_session(
            ort,
            identity_model,
            ort.SessionOptions(),
            [("CUDAExecutionProvider", {"device_id": 0})],
            heard.append,
        )
    message = str(raised.value)
    assert "asked ONNX Runtime for ['CUDAExecutionProvider']" in message
    assert "runs on ['CPUExecutionProvider']" in message
    assert "missing: CUDAExecutionProvider" in message
    assert "not in available provider names" in message
    assert heard and "CUDAExecutionProvider" in heard[0]


def test_the_cpu_provider_opens_and_reports_what_it_runs_on(identity_model: str) -> None:
    """A request the installed build can honour opens a session that runs on it."""
    session = open_checked_session(
        ort, identity_model, ort.SessionOptions(), ["CPUExecutionProvider"]
    )
    assert session.get_providers() == ["CPUExecutionProvider"]


class _FailingEP:
    """Mirrors onnxruntime 1.31 ``InferenceSession`` when the TensorRT EP library cannot be
    loaded: the native logger writes the loader error to fd 2, and with fallback disabled
    the constructor raises (with fallback on it would retry on CUDA and print "EP Error")."""

    def __init__(
        self, path: str, sess_options: Any = None, providers: Any = None, **kwargs: Any
    ) -> None:
        os.write(
            2,
            b"[E:onnxruntime:Default, provider_bridge_ort.cc:2251 TryGetProviderInfo_TensorRT] "
            b"Failed to load library libonnxruntime_providers_tensorrt.so with error: "
            b"libnvinfer.so.10: cannot open shared object file\n",
        )
        if int(kwargs.get("enable_fallback", 1)) == 1:
            raise AssertionError("the checked session must turn onnxruntime's fallback off")
        raise RuntimeError("TensorRT execution provider is not enabled in this build.")


def test_a_provider_that_fails_to_load_is_a_failure_with_the_native_log_line() -> None:
    """An EP load failure is not retried on other providers: the error names the request
    and carries the line onnxruntime's native logger wrote to stderr."""
    fake = type("FakeOrt", (), {"InferenceSession": _FailingEP})
    providers = [("TensorrtExecutionProvider", {}), ("CUDAExecutionProvider", {})]
    with pytest.raises(ProviderMismatch) as raised:
        open_checked_session(fake, "model.onnx", None, providers)
    message = str(raised.value)
    assert "['TensorrtExecutionProvider', 'CUDAExecutionProvider']" in message
    assert "libnvinfer.so.10: cannot open shared object file" in message


class _QuietFallback:
    """A session whose ``get_providers()`` lacks the requested TensorRT provider, as
    onnxruntime's own fallback leaves it (``["CUDAExecutionProvider", "CPUExecutionProvider"]``)."""

    def __init__(self, path: str, sess_options: Any = None, providers: Any = None, **_: Any):
        print("EP Error TensorRT EP could not be created when using [...]")

    def get_providers(self) -> list[str]:
        return ["CUDAExecutionProvider", "CPUExecutionProvider"]


def test_a_session_that_fell_back_is_refused_with_the_ep_error_text() -> None:
    """A session that runs on fewer providers than asked is refused, quoting "EP Error"."""
    fake = type("FakeOrt", (), {"InferenceSession": _QuietFallback})
    providers = [("TensorrtExecutionProvider", {}), ("CUDAExecutionProvider", {})]
    with pytest.raises(ProviderMismatch, match=r"missing: TensorrtExecutionProvider.*EP Error"):
        open_checked_session(fake, "model.onnx", None, providers)


def test_reason_lines_skip_banners_and_unrelated_output() -> None:
    """Only lines that explain a provider problem are kept; the asterisk banner is not."""
    text = "*************** EP Error ***************\nEP Error boom when using [...]\nhello\n"
    assert reason_lines(text) == "EP Error boom when using [...]"
