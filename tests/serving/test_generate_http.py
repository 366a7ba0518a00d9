"""aitune-fp serve FILE --module FACTORY --tokenizer FACTORY for a saved generator on a local
Ray (2 CPUs, 127.0.0.1 only): real HTTP requests to POST /generate get the generator's
tokens, text and per-request timing; a refused argument is a 422; SIGTERM stops it."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

pytest.importorskip("transformers")

from tests.serving.serve_process import call, free_port, serving
from tests.tiny_generator import picked
from tests.tiny_hf import tiny_llama

FACTORIES = """
from tests.tiny_hf import tiny_llama
from tests.tiny_tokenizer import tiny_tokenizer

def build():
    return tiny_llama(vocab=256)

def tokenizer():
    return tiny_tokenizer()
"""


class GenServer:
    """The serve command in its own process, and where it listens."""

    def __init__(self, port: int, process: subprocess.Popen[bytes], log: Path) -> None:
        self.port, self.process, self.log = port, process, log


def _post(port: int, doc: dict[str, Any]) -> tuple[int, Any]:
    status, body = call(port, "POST", "/generate", json.dumps(doc).encode())
    return status, json.loads(body)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GenServer]:
    """``aitune-fp serve gen.json --module … --tokenizer …`` on a free loopback port."""
    pytest.importorskip("ray.serve", reason="the serve extra is not installed")
    tmp = tmp_path_factory.mktemp("serve_generate")
    (tmp / "lm.py").write_text(FACTORIES)
    picked(tiny_llama(vocab=256)).save(tmp / "gen.json")
    port, log = free_port(), tmp / "serve.log"
    arguments = [str(tmp / "gen.json"), "--module", f"{tmp / 'lm.py'}:build"]
    arguments += ["--tokenizer", f"{tmp / 'lm.py'}:tokenizer"]
    with serving(arguments, port, log) as process:
        yield GenServer(port, process, log)


@pytest.mark.heavy
def test_generate_over_http_gives_the_tokens_and_timing(server: GenServer) -> None:
    """Token ids and text requests get model.generate's greedy tokens, decoded text and a
    timing with TTFT, inter-token latency and tokens/s; /info names the pick."""
    model = tiny_llama(vocab=256)
    ids = torch.randint(3, 256, (2, 5), generator=torch.Generator().manual_seed(11))
    status, doc = _post(server.port, {"input_ids": ids.tolist(), "max_new_tokens": 6})
    assert status == 200, doc
    want = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=6)
    assert doc["tokens"] == want[:, 5:].tolist() and doc["pick"] == "eager_static"
    timing = doc["timing"]
    assert timing["new_tokens"] == 6 and 0 < timing["ttft_ms"] <= timing["total_ms"]
    assert timing["itl_ms"] > 0 and timing["tokens_per_s"] > 0
    status, doc = _post(server.port, {"text": "w5 w9 w77", "max_new_tokens": 3})
    assert status == 200 and len(doc["tokens"][0]) == 3 and doc["text"][0].startswith("w")
    info = json.loads(call(server.port, "GET", "/info")[1])
    assert info["pick"] == "eager_static" and info["served"]["requests"] >= 2


@pytest.mark.heavy
def test_refused_argument_is_422_and_sigterm_stops_it(server: GenServer) -> None:
    """do_sample=True is a 422 naming it, the server keeps serving, and SIGTERM ends the
    command within 30 s with exit 143 (Ray's aborting failure handler is off in the serving
    process, so never SIGABRT or code 15)."""
    status, doc = _post(server.port, {"input_ids": [4, 5, 6], "do_sample": True})
    assert status == 422 and "do_sample=True" in doc["error"]
    assert _post(server.port, {"input_ids": [4, 5, 6], "max_new_tokens": 2})[0] == 200
    server.process.send_signal(signal.SIGTERM)
    assert server.process.wait(30) == 143, server.log.read_text()
