"""aitune-fp serve DIR on a local Ray (2 CPUs, no dashboard, 127.0.0.1 only): HTTP requests
from this process get the tuned module's outputs, bad payloads get 4xx while it keeps
serving, a bounded load run is batched, and SIGTERM stops it."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

import aitune_fp
from aitune_fp.cli.main import main
from aitune_fp.shell.serving.load import closed_loop
from aitune_fp.shell.serving.ray_serve import INSTALL_HINT
from tests.serving.saved_linear import save_linear
from tests.serving.serve_process import call, free_port, serving


class Server:
    """The serve command in its own process, and where it listens."""

    def __init__(self, saved: Path, port: int, process: subprocess.Popen[bytes], log: Path) -> None:
        self.saved, self.port, self.process, self.log = saved, port, process, log


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """``aitune-fp serve`` started on a free loopback port, up to START_SECONDS to answer."""
    pytest.importorskip("ray.serve", reason="the serve extra is not installed")
    tmp = tmp_path_factory.mktemp("serve")
    saved, port, log = save_linear(tmp), free_port(), tmp / "serve.log"
    with serving([str(saved)], port, log) as process:
        yield Server(saved, port, process, log)


@pytest.mark.heavy
def test_http_requests_get_the_tuned_modules_outputs(server: Server) -> None:
    """JSON requests from another process get outputs equal to the tuned module's, and /info
    names the backend and the tuned batching."""
    tuned = aitune_fp.load(server.saved)
    for rows in (1, 3, 8):
        x = torch.randn(rows, 4)
        status, body = call(
            server.port,
            "POST",
            "/predict",
            json.dumps({"inputs": {"input_0": x.tolist()}}).encode(),
        )
        assert status == 200, body
        assert torch.equal(torch.tensor(json.loads(body)["outputs"]["output_0"]), tuned(x))
    info = json.loads(call(server.port, "GET", "/info")[1])
    assert info["backend"] == "onnxruntime" and info["batching"]["max_batch_size"] == 8


@pytest.mark.heavy
def test_bad_payloads_get_4xx_and_the_server_keeps_serving(server: Server) -> None:
    """Malformed, wrongly shaped and wrongly typed payloads get 4xx with one line; a good
    request afterwards is still answered."""
    bad = [
        (b"{oops", "application/json", 400),
        (b'{"inputs": {"input_0": [[1, 2, 3]]}}', "application/json", 422),
        (b'{"inputs": {"input_0": [[1, 2, "x", 4]]}}', "application/json", 422),
        (b"\x93NUMPY not really", "application/x-npy", 400),
    ]
    for body, kind, want in bad:
        status, reply = call(server.port, "POST", "/predict", body, kind)
        assert status == want, reply
        assert "\n" not in json.loads(reply)["error"]
    good = json.dumps({"inputs": {"input_0": [[1.0, 2.0, 3.0, 4.0]]}}).encode()
    assert call(server.port, "POST", "/predict", good)[0] == 200


@pytest.mark.heavy
def test_a_bounded_load_run_is_batched(server: Server) -> None:
    """16 closed-loop clients for 4 s get answers without errors, and the replica ran
    batches of more than one row on average."""
    body = json.dumps({"inputs": {"input_0": [[1.0, 2.0, 3.0, 4.0]]}}).encode()
    url = f"http://127.0.0.1:{server.port}/predict"
    result = closed_loop(url, body, "application/json", clients=16, seconds=4.0, max_requests=5000)
    assert result.errors == 0 and len(result.latencies_ms) > 16
    served = json.loads(call(server.port, "GET", "/info")[1])["served"]
    assert served["mean_batch_rows"] > 1.0


@pytest.mark.heavy
def test_sigterm_stops_the_server(server: Server) -> None:
    """SIGTERM ends the serve command (exit 143) after it has stopped Serve and Ray."""
    server.process.send_signal(signal.SIGTERM)
    assert server.process.wait(90) == 143, server.log.read_text()


def test_without_ray_serve_the_command_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With Ray Serve missing, serve exits 1 with one line naming aitune_fp[serve]."""
    saved = save_linear(tmp_path)
    monkeypatch.setitem(sys.modules, "ray", None)
    assert main(["serve", str(saved), "--port", str(free_port())]) == 1
    assert capsys.readouterr().err.strip() == f"aitune-fp: error: {INSTALL_HINT}"
