"""The tuning service's wire and loop, without torch: private folder, messages with
descriptors, peer credentials, digest, idle exit, stale sockets."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from subprocess import PIPE

import pytest
from pyrsistent import pmap

from aitune_fp.core.serving.service_messages import (
    Refused,
    Reply,
    Status,
    StatusAsked,
    StopAsked,
    Stopping,
    TuneAsked,
    decode_request,
    encode,
)
from aitune_fp.effects.isolation import service_wire as wire

ROOT = Path(__file__).resolve().parents[2]


def test_a_folder_others_may_enter_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The service folder must be 0700: a group- or world-accessible one is refused."""
    folder = tmp_path / "svc"
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o755)
    monkeypatch.setenv("AITUNE_FP_SERVICE_DIR", str(folder))
    with pytest.raises(wire.Unsafe):
        wire.private_dir(create=False)
    os.chmod(folder, 0o700)
    assert wire.private_dir(create=False) == folder


def test_a_created_folder_is_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder the service creates is 0700 whatever the umask."""
    monkeypatch.setenv("AITUNE_FP_SERVICE_DIR", str(tmp_path / "new"))
    old = os.umask(0)
    try:
        path = wire.private_dir(create=True)
    finally:
        os.umask(old)
    assert (path.stat().st_mode & 0o777) == 0o700


def test_messages_carry_descriptors_and_the_peer_is_this_user() -> None:
    """A message sent with descriptors arrives whole with working copies of them, also
    when larger than one read; the peer's uid is ours."""
    left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    read, write = os.pipe()
    env = pmap({f"K{i}": "v" * 100 for i in range(2000)})
    big = TuneAsked(("demo",), "aitune-fp", "/", env, ("/p",), "d")
    with left, right:
        sender = threading.Thread(target=wire.send, args=(left, big, [write]))
        sender.start()
        body, fds = wire.receive(right)
        message = decode_request(body)
        sender.join(timeout=30)
        assert message == big and len(fds) == 1
        os.write(fds[0], b"hi")
        assert os.read(read, 2) == b"hi"
        assert wire.peer_uid(right) == os.getuid()
        for fd in (*fds, read, write):
            os.close(fd)


def test_the_digest_follows_the_search_path_and_import_time_environment() -> None:
    """Another search path or thread setting is another installation; HOME is not."""
    base = wire.digest({"HOME": "/a"})
    assert wire.digest({"HOME": "/b"}) == base
    assert wire.digest({"HOME": "/a", "OMP_NUM_THREADS": "3"}) != base
    assert wire.digest({"HOME": "/a"}, ["/elsewhere", *wire.search_path()]) != base


IDLE = """
import os, socket, sys, time
from pathlib import Path
from aitune_fp.effects.isolation.service_daemon import Service
path = Path(sys.argv[1])
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind(str(path)); listener.listen()
began = time.monotonic()
Service(listener, path, 0.5, lambda *a: os._exit(9)).serve()
print(round(time.monotonic() - began, 2), path.exists(), "torch" in sys.modules)
"""


def test_an_idle_service_exits_and_removes_its_socket(tmp_path: Path) -> None:
    """With no request for ``idle`` seconds the loop ends and its socket file is gone (and
    the loop itself never imports torch)."""
    path = tmp_path / "s.sock"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", IDLE, str(path)], capture_output=True,
                          text=True, timeout=120, env=env, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    seconds, exists, torch_imported = done.stdout.split()
    assert 0.4 < float(seconds) < 30 and exists == "False" and torch_imported == "False"


def test_a_stale_socket_is_removed_and_no_service_is_reported(tmp_path: Path) -> None:
    """A socket file nobody listens on (a service that died) is removed by the next
    client, which then says no service runs."""
    folder = tmp_path / "svc"
    folder.mkdir(mode=0o700)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(folder / wire.SOCKET))
    stale.close()
    assert wire.is_socket(folder / wire.SOCKET)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "AITUNE_FP_SERVICE_DIR": str(folder)}
    began = time.monotonic()
    status = [sys.executable, "-m", "aitune_fp", "service", "status"]
    done = subprocess.run(status, capture_output=True, text=True, timeout=120, env=env, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "no service running" in done.stdout
    assert not (folder / wire.SOCKET).exists()
    assert time.monotonic() - began < 60


ATTACH = """
import sys
from aitune_fp.cli import main, service_client
print(service_client.attach(["demo", "--model", "mlp"]), "torch" in sys.modules)
"""


def test_attaching_without_a_service_runs_here_and_imports_nothing_heavy(tmp_path: Path) -> None:
    """With no service running, attach answers "run here" (``None``) and the CLI process
    has still not imported torch."""
    folder = tmp_path / "none"
    folder.mkdir(mode=0o700)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "AITUNE_FP_SERVICE_DIR": str(folder)}
    done = subprocess.run([sys.executable, "-c", ATTACH], capture_output=True, text=True,
                          timeout=120, env=env, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["None", "False"]


SERVE = """
import os, socket, sys
from pathlib import Path
from aitune_fp.effects.isolation.service_daemon import Service
path = Path(sys.argv[1])
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind(str(path)); listener.listen()
print("ready", flush=True)
Service(listener, path, 30.0, lambda *a: os._exit(9)).serve()
"""


def _exchange(path: Path, body: bytes) -> Reply:
    """Send one raw frame to the service at ``path`` and read its reply."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(30)
        sock.connect(str(path))
        sock.sendall(wire.HEADER.pack(len(body)) + body)
        return wire.reply(sock)


def test_the_loop_refuses_a_malformed_request_in_one_line_and_keeps_serving(
    tmp_path: Path,
) -> None:
    """A frame that is not JSON, or names an unknown request, is answered with a one-line
    Refused (no traceback in the log); the same service then answers status and stops."""
    path = tmp_path / "s.sock"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-c", SERVE, str(path)]
    loop = subprocess.Popen(command, env=env, text=True, stdout=PIPE, stderr=PIPE)
    try:
        assert loop.stdout is not None and loop.stdout.readline().strip() == "ready"
        garbage = _exchange(path, b"\x00 not json")
        unknown = _exchange(path, b'{"op": "dance"}')
        status = _exchange(path, encode(StatusAsked()))
        stopping = _exchange(path, encode(StopAsked()))
        _, err = loop.communicate(timeout=60)
    finally:
        loop.kill()
    assert isinstance(garbage, Refused) and garbage.refused.startswith("not JSON")
    assert unknown == Refused("not a request: op: expected status, stop or tune, got 'dance'")
    assert isinstance(status, Status) and status.pid == loop.pid
    assert stopping == Stopping(0) and "Traceback" not in err, err
