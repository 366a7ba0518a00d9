"""Where the long-lived tuning service listens, who may talk to it, and how they talk.

Rules (standard library only on import: the CLI attaches with this before it imports
anything heavy or anything of the core; the typed messages are imported when a message is
first sent or read):
- the service's files live in one private folder (:func:`service_dir`):
  ``$AITUNE_FP_SERVICE_DIR``, else ``$XDG_RUNTIME_DIR/aitune_fp``, else
  ``$XDG_CACHE_HOME/aitune_fp/service`` (``~/.cache`` by default); it is created ``0700``
  and refused (:class:`Unsafe`) when it belongs to another user or others may enter it;
  the socket in it is ``0600``, and the service also refuses a peer of another uid
  (:func:`peer_uid`, ``SO_PEERCRED``);
- a message is 4 bytes of length (big-endian) and a typed record's JSON text
  (:mod:`aitune_fp.core.serving.service_messages`: :func:`send` encodes it, the reader
  decodes what :func:`receive` returns, so a malformed message is a refusal value); file
  descriptors travel with its first bytes (``SCM_RIGHTS``);
- :func:`digest` names the installation a process runs: the interpreter, its version,
  aitune_fp's version and place, the module search path and the environment variables
  read when libraries are imported (threads, devices, compilers, Python's own) and the
  wire protocol's version; a
  service answers only a client with its own digest, so a tune never runs code or
  settings other than the ones the user's own process would have used.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import stat
import struct
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from aitune_fp.core.serving.service_messages import Reply, Request, TuneAsked

HEADER: Final = struct.Struct(">I")
MAX_FDS: Final = 8
SOCKET: Final = "service.sock"
LOG: Final = "service.log"
LOCK: Final = "service.lock"
ENV_PREFIXES: Final = (
    "TORCH", "PYTORCH", "OMP_", "MKL_", "KMP_", "GOMP", "CUDA", "NVIDIA", "LD_", "PYTHON",
    "AITUNE_FP", "MPL", "ORT_", "TRITON", "ONEDNN", "DNNL",
)  # fmt: skip
ENV_IGNORED: Final = frozenset(
    {"PYTHONPATH", "PYTHONSAFEPATH", "AITUNE_FP_SERVICE", "AITUNE_FP_SERVICE_DIR"}
)


class Unsafe(Exception):
    """The service folder exists but is not private to this user."""


def service_dir(env: Mapping[str, str] | None = None) -> Path:
    """The service's folder (see the rules).

    >>> str(service_dir({"AITUNE_FP_SERVICE_DIR": "/s", "XDG_RUNTIME_DIR": "/r"}))
    '/s'
    >>> str(service_dir({"XDG_RUNTIME_DIR": "/run/user/7"}))
    '/run/user/7/aitune_fp'
    >>> str(service_dir({"XDG_CACHE_HOME": "/c"}))
    '/c/aitune_fp/service'
    """
    env = os.environ if env is None else env
    if chosen := env.get("AITUNE_FP_SERVICE_DIR"):
        return Path(chosen)
    if runtime := env.get("XDG_RUNTIME_DIR"):
        return Path(runtime) / "aitune_fp"
    cache = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "aitune_fp" / "service"


def private_dir(*, create: bool) -> Path:
    """:func:`service_dir`, checked private to this user (created ``0700`` when asked)."""
    path = service_dir()
    if create:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = path.stat()
    if info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) & 0o077:
        raise Unsafe(f"{path} is not private to this user (owner or mode); not used")
    return path


def is_socket(path: Path) -> bool:
    """Whether ``path`` is a socket file (a leftover of a service that died, or a live one)."""
    try:
        return stat.S_ISSOCK(path.lstat().st_mode)
    except OSError:
        return False


def peer_uid(sock: socket.socket) -> int:
    """The uid of the process at the other end of a Unix socket."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return int(struct.unpack("3i", creds)[1])


def send(sock: socket.socket, message: Request | Reply, fds: Sequence[int] = ()) -> None:
    """Send ``message`` (and ``fds`` with its first bytes)."""
    from aitune_fp.core.serving.service_messages import encode

    data = encode(message)
    data = HEADER.pack(len(data)) + data
    sent = socket.send_fds(sock, [data], list(fds)) if fds else sock.send(data)
    if sent < len(data):  # never an empty send: the peer may have answered and closed
        sock.sendall(data[sent:])


def receive(sock: socket.socket) -> tuple[bytes, list[int]]:
    """The next message's text and the descriptors that came with it; ``EOFError`` when the
    other end closed before a whole message."""
    data, fds, _flags, _addr = socket.recv_fds(sock, 65536, MAX_FDS)
    try:
        if len(data) < HEADER.size:
            data += _exactly(sock, HEADER.size - len(data))
        (size,) = HEADER.unpack(data[: HEADER.size])
        body = data[HEADER.size :]
        if len(body) < size:
            body += _exactly(sock, size - len(body))
        return body[:size], fds
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise


def reply(sock: socket.socket) -> Reply:
    """The next reply (a malformed one: a refusal saying so)."""
    from aitune_fp.core.serving.service_messages import decode_reply

    return decode_reply(receive(sock)[0])


def _exactly(sock: socket.socket, count: int) -> bytes:
    chunks = []
    while count > 0:
        chunk = sock.recv(min(count, 1 << 20))
        if not chunk:
            raise EOFError("the other end closed the connection")
        chunks.append(chunk)
        count -= len(chunk)
    return b"".join(chunks)


def search_path() -> list[str]:
    """This process's module search path, the working directory written out, no repeats."""
    return list(dict.fromkeys(entry or os.getcwd() for entry in sys.path))


def import_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The variables of ``env`` that libraries read when they are imported.

    >>> import_environment({"OMP_NUM_THREADS": "2", "HOME": "/h", "PYTHONPATH": "/p"})
    {'OMP_NUM_THREADS': '2'}
    """
    return {
        key: value
        for key, value in sorted(env.items())
        if key.startswith(ENV_PREFIXES) and key not in ENV_IGNORED
    }


def digest(env: Mapping[str, str] | None = None, path: Sequence[str] | None = None) -> str:
    """The installation this process runs (see the rules), as a short hex string.

    >>> digest({"OMP_NUM_THREADS": "1"}) != digest({"OMP_NUM_THREADS": "2"})
    True
    """
    from aitune_fp import __file__ as package_file
    from aitune_fp import __version__
    from aitune_fp.core.serving.service_messages import PROTOCOL

    facts = {
        "executable": os.path.realpath(sys.executable),
        "python": sys.version,
        "aitune_fp": [__version__, os.path.dirname(os.path.realpath(package_file))],
        "path": list(search_path() if path is None else path),
        "env": import_environment(os.environ if env is None else env),
        "protocol": PROTOCOL,
    }
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:16]


def tune_asked(argv: Sequence[str]) -> TuneAsked:
    """The request to tune ``argv`` as this process would: its place, environment, search
    path, digest, start time and stdout encoding (its stdio travels with it)."""
    from pyrsistent import pmap

    from aitune_fp.core.serving.service_messages import TuneAsked

    env = dict(os.environ)
    return TuneAsked(
        argv=tuple(argv),
        argv0=sys.argv[0] if sys.argv else "aitune-fp",
        cwd=os.getcwd(),
        env=pmap(env),
        path=tuple(search_path()),
        digest=digest(env),
        started=process_start(),
        encoding=getattr(sys.stdout, "encoding", None),
    )


def process_start() -> float | None:
    """When this process started, in ``CLOCK_BOOTTIME`` seconds (``None`` off Linux): a
    tune forked by the service counts its wall from the client's start, not its own."""
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return None
