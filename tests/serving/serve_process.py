"""The ``aitune-fp serve`` command in its own process for the HTTP tests: started on a
loopback port, waited for until ``GET /health`` answers, stopped with SIGTERM at the end."""

from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
START_SECONDS = 240.0


def free_port() -> int:
    """A loopback port nobody listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def call(
    port: int, method: str, path: str, body: bytes = b"", kind: str = "application/json"
) -> tuple[int, bytes]:
    """One HTTP request to the local server: (status, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, path, body, {"Content-Type": kind})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


@contextmanager
def serving(arguments: list[str], port: int, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """``aitune-fp serve *arguments --port PORT`` (2 CPUs), up to START_SECONDS to answer;
    SIGTERM (then a kill) when the block ends."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_USAGE_STATS_ENABLED": "0"}
    command = [sys.executable, "-m", "aitune_fp", "serve", *arguments, "--port", str(port)]
    command += ["--num-cpus", "2", "--duration", "600"]
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + START_SECONDS
    try:
        while True:
            assert process.poll() is None, log.read_text()
            try:
                if call(port, "GET", "/health")[0] == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, f"no answer in {START_SECONDS} s: {log.read_text()}"
            time.sleep(1.0)
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(90)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
