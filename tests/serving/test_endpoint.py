"""The endpoint without a server: outputs equal the tuned module's, bad payloads are 4xx
with one line and the endpoint keeps serving, and batching splits outputs back exactly."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import aitune_fp
from aitune_fp.effects.serving.batching import Request, run_batches
from aitune_fp.shell.serving.endpoint import Endpoint, Reply
from aitune_fp.shell.serving.saved import Served, read_saved
from tests.serving.saved_linear import BATCH_SIZE, ENVELOPE_MAX, linear, save_linear


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The linear ONNX winner, saved once for the module."""
    return save_linear(tmp_path_factory.mktemp("serving"))


@pytest.fixture(scope="module")
def endpoint(saved: Path) -> Endpoint:
    """The endpoint over the saved model (no eager module: outside the envelope refuses)."""
    return Endpoint(Served(str(saved)), read_saved(saved))


def _ask(
    endpoint: Endpoint, method: str, path: str, content_type: str | None, body: bytes
) -> Reply:
    return asyncio.run(endpoint.handle(method, path, content_type, body, endpoint.infer_alone))


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def test_json_and_npy_requests_get_the_tuned_modules_outputs(
    saved: Path, endpoint: Endpoint
) -> None:
    """A JSON and an .npy request get exactly what the loaded tuned module returns."""
    x = torch.randn(3, 4)
    tuned = aitune_fp.load(saved)
    want = tuned(x)
    reply = _ask(
        endpoint,
        "POST",
        "/predict",
        "application/json",
        json.dumps({"inputs": {"input_0": x.tolist()}}).encode(),
    )
    assert reply.status == 200
    assert torch.equal(torch.tensor(json.loads(reply.body)["outputs"]["output_0"]), want)
    reply = _ask(endpoint, "POST", "/predict", "application/x-npy", _npy(x.numpy()))
    assert reply.status == 200 and reply.content_type == "application/x-npz"
    assert torch.equal(torch.from_numpy(np.load(io.BytesIO(reply.body))["output_0"]), want)
    assert torch.allclose(want, linear(x), atol=1e-5)


BAD = [
    ("application/json", b"{not json", 400, "not JSON"),
    ("application/json", b'{"inputs": {"x": [[1, 2, 3, 4]]}}', 400, "unknown input 'x'"),
    (
        "application/json",
        b'{"inputs": {"input_0": [[1, 2, 3]]}}',
        422,
        "input_0 axis 1 is 3, expected 4",
    ),
    ("application/json", b'{"inputs": {"input_0": [[1, 2], [1]]}}', 400, "ragged"),
    ("application/json", b'{"inputs": {"input_0": [[1, 2, "a", 4]]}}', 422, "str where a number"),
    (
        "application/x-npy",
        _npy(np.zeros((2, 4), np.float64)),
        422,
        "input_0 is float64, expected float32",
    ),
    ("application/x-npy", _npy(np.zeros((2, 4, 1), np.float32)), 422, "expected 2 dimensions"),
    ("application/x-npy", b"\x93NUMPY garbage", 400, "not an .npy array"),
    ("application/x-npz", b"nope", 400, "not an .npz archive"),
    ("text/plain", b"1 2 3 4", 415, "unsupported content type"),
    (
        "application/json",
        json.dumps({"inputs": {"input_0": [[0.0] * 4] * (ENVELOPE_MAX + 1)}}).encode(),
        422,
        "outside the envelope",
    ),
]


@pytest.mark.parametrize(("content_type", "body", "status", "reason"), BAD)
def test_bad_payloads_are_4xx_with_one_line_and_serving_goes_on(
    endpoint: Endpoint, content_type: str, body: bytes, status: int, reason: str
) -> None:
    """Malformed, wrongly shaped, wrongly typed or out-of-envelope payloads get a 4xx whose
    JSON body is one line naming the problem, and the next good request is answered."""
    reply = _ask(endpoint, "POST", "/predict", content_type, body)
    assert reply.status == status
    message = json.loads(reply.body)["error"]
    assert reason in message and "\n" not in message
    good = json.dumps({"inputs": {"input_0": [[1.0, 2.0, 3.0, 4.0]]}}).encode()
    assert _ask(endpoint, "POST", "/predict", "application/json", good).status == 200


def test_health_info_and_unknown_routes(endpoint: Endpoint) -> None:
    """/health is ok, /info names the backend, the tuned batching and the decision, and an
    unknown route or method is a 404/405 with one line."""
    assert json.loads(_ask(endpoint, "GET", "/health", None, b"").body)["status"] == "ok"
    info = json.loads(_ask(endpoint, "GET", "/info", None, b"").body)
    assert info["backend"] == "onnxruntime"
    assert info["batching"]["max_batch_size"] == BATCH_SIZE
    assert info["envelope"]["max_batch_size"] == ENVELOPE_MAX
    assert info["envelope"]["outside"] == "refused (422)"
    assert info["decision"][0].startswith("Selected onnxruntime (batch size 8)")
    assert _ask(endpoint, "GET", "/nope", None, b"").status == 404
    assert _ask(endpoint, "GET", "/predict", None, b"").status == 405


@given(st.lists(st.integers(1, 5), min_size=1, max_size=8), st.integers(1, 8))
def test_batches_hold_at_most_max_rows_and_outputs_split_back_exactly(
    rows: list[int], max_rows: int
) -> None:
    """Requests merged into batches of at most max_rows rows (a bigger request alone) get
    back exactly the rows a call of their own would give."""
    requests = [Request((torch.randn(r, 4),), {}, r) for r in rows]
    results, sizes = run_batches(linear, requests, 0, max_rows)
    assert sum(sizes) == sum(rows)
    assert all(s <= max_rows or s in rows for s in sizes)
    for request, result in zip(requests, results, strict=True):
        assert torch.allclose(result, linear(request.args[0]), atol=1e-6)


def test_a_batch_that_raises_fails_its_requests_only() -> None:
    """A model call that raises hands the exception to that batch's requests; requests of
    another shape, batched apart, still get outputs."""

    def model(x: torch.Tensor) -> torch.Tensor:
        if x.shape[1] == 3:
            raise RuntimeError("boom")
        return x * 2

    requests = [
        Request((torch.ones(1, 3),)),
        Request((torch.ones(1, 4),)),
        Request((torch.ones(1, 3),)),
    ]
    results, _ = run_batches(model, requests, 0, 8)
    assert isinstance(results[0], RuntimeError) and isinstance(results[2], RuntimeError)
    assert torch.equal(results[1], torch.full((1, 4), 2.0))


class _Linear(torch.nn.Module):
    """The saved graph as an eager module (what the save was 'tuned from')."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return linear(x)


def test_with_the_module_outside_the_envelope_runs_eagerly(saved: Path) -> None:
    """Given the module, a batch beyond the tuned envelope is answered by the eager module
    (200, its outputs) instead of refused, and /info says so."""
    endpoint = Endpoint(Served(str(saved), module=_Linear()), read_saved(saved))
    x = torch.randn(ENVELOPE_MAX + 1, 4)
    body = json.dumps({"inputs": {"input_0": x.tolist()}}).encode()
    with pytest.warns(aitune_fp.shell.tuned_module.OutsideEnvelopeWarning):
        reply = _ask(endpoint, "POST", "/predict", "application/json", body)
    assert reply.status == 200
    got = torch.tensor(json.loads(reply.body)["outputs"]["output_0"])
    assert torch.allclose(got, linear(x), atol=1e-6)
    info = json.loads(_ask(endpoint, "GET", "/info", None, b"").body)
    assert info["envelope"]["outside"] == "eager" and info["served"]["alone"] == 1


def test_the_eager_control_serves_the_module_itself(saved: Path) -> None:
    """eager=True serves the given module with the same batching plan and says so."""
    endpoint = Endpoint(Served(str(saved), module=_Linear(), eager=True), read_saved(saved))
    x = torch.randn(2, 4)
    reply = _ask(endpoint, "POST", "/predict", "application/x-npy", _npy(x.numpy()))
    assert reply.status == 200
    assert torch.equal(torch.from_numpy(np.load(io.BytesIO(reply.body))["output_0"]), linear(x))
    info = json.loads(_ask(endpoint, "GET", "/info", None, b"").body)
    assert info["backend"] == "eager (control)"
    assert info["batching"]["max_batch_size"] == BATCH_SIZE


def test_keyword_inputs_are_batched_by_name() -> None:
    """Requests with keyword inputs are merged per keyword and split back exactly."""

    def model(*, ids: torch.Tensor, mask: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"sum": (ids * mask).sum(1), "ids": ids}

    requests = [
        Request(
            (), {"ids": torch.randint(0, 9, (r, 5)), "mask": torch.ones(r, 5, dtype=torch.long)}, r
        )
        for r in (1, 2, 3)
    ]
    results, sizes = run_batches(model, requests, 0, 8)
    assert sizes == [6]
    for request, result in zip(requests, results, strict=True):
        want = model(**request.kwargs)
        assert torch.equal(result["sum"], want["sum"]) and torch.equal(result["ids"], want["ids"])


def test_an_integer_beyond_the_dtype_is_a_422() -> None:
    """A JSON integer that does not fit an int64 input is refused in one line, not raised."""
    from aitune_fp.core.serving.schema import PayloadError, TensorSig
    from aitune_fp.effects.serving.codec import decode

    refused = decode(
        "application/json",
        b'{"inputs": {"ids": [[99999999999999999999999]]}}',
        (TensorSig("ids", "int64", (-1, 1)),),
    )
    assert isinstance(refused, PayloadError) and refused.status == 422
    assert refused.reason.startswith("ids does not fit int64")
