"""``aitune-fp service start|stop|status``: the long-lived tuning service's lifecycle.

Rules:
- ``start`` starts this user's service (:mod:`aitune_fp.cli.service_main`) as a daemon in
  its own session, logging to ``service.log`` in the service's folder, with this
  process's interpreter, search path and environment, and waits until it answers (it
  imports torch and the backends' libraries and starts the workers' fork server first);
  a service that is already running is left as it is (exit 0, says so); one that
  cannot start is exit 1 with the end of its log;
- ``stop`` asks it to stop (running tunes are terminated) and waits until its socket is
  gone; ``status`` prints what it is doing; both exit 0 with "no service running" when
  none runs; a service whose answer cannot be read (an older protocol) is one line saying
  so, and ``stop`` still ends it;
- ``--idle-timeout`` (seconds, default
  :data:`~aitune_fp.cli.service_start.IDLE_TIMEOUT`, 900: also the timeout of a service
  a first ``tune``/``demo`` started by itself): the service exits after that long without
  a request or a running tune.
"""

from __future__ import annotations

import argparse
import subprocess
import time
from pathlib import Path
from typing import Any, Final

from aitune_fp.cli.options import seconds_arg
from aitune_fp.cli.service_client import ask, socket_path
from aitune_fp.cli.service_start import IDLE_TIMEOUT, launch
from aitune_fp.core.serving.service_messages import Reply, Status, StatusAsked, StopAsked
from aitune_fp.effects.isolation import service_wire as wire

START_WAIT: Final = 300.0


def add_service_parser(sub: Any) -> None:
    """The ``service`` command's parser."""
    parser = sub.add_parser(
        "service",
        help="a long-lived tuning service that tune and demo attach to (docs/service.md)",
    )
    parser.add_argument("action", choices=("start", "stop", "status"))
    parser.add_argument(
        "--idle-timeout",
        type=seconds_arg,
        default=IDLE_TIMEOUT,
        metavar="SECONDS",
        help=f"the service exits after this long unused (default: {IDLE_TIMEOUT:g})",
    )


def service(args: argparse.Namespace, out: Any, err: Any) -> int:
    """Run ``service ACTION``."""
    if args.action == "status":
        return _status(out)
    if args.action == "stop":
        return _stop(out)
    return _start(args.idle_timeout, out)


def _status(out: Any) -> int:
    answer = ask(StatusAsked())
    if answer is None:
        out.print("no service running", highlight=False)
        return 0
    if not isinstance(answer, Status):
        out.print(f"a service runs but its status cannot be read: {_why(answer)}", highlight=False)
        return 1
    mine = answer.digest == wire.digest()
    out.print(
        f"service pid {answer.pid}: {answer.served} tunes served, "
        f"{answer.running} running, idle {answer.idle_for:.0f} s of "
        f"{answer.idle_timeout:g} s, warm in {answer.warm_seconds:.1f} s, "
        f"fork server {answer.fork_server}; "
        f"{'serves this installation' if mine else 'started for another installation'}; "
        f"socket {socket_path()}, log {answer.log}",
        highlight=False,
    )
    return 0


def _why(answer: Reply) -> str:
    """What an answer that is not the one expected says."""
    return str(getattr(answer, "refused", repr(answer)))


def _stop(out: Any) -> int:
    answer = ask(StopAsked())
    if answer is None:
        out.print("no service running", highlight=False)
        return 0
    deadline = time.monotonic() + 30.0
    while wire.is_socket(socket_path()) and time.monotonic() < deadline:
        time.sleep(0.05)
    running = getattr(answer, "running", 0)
    out.print(f"service stopped ({running} running tunes terminated)", highlight=False)
    return 0


def _start(idle: float, out: Any) -> int:
    from aitune_fp.cli.outputs import CliError

    answer = ask(StatusAsked())
    if answer is not None:
        out.print(f"service already running ({_pid(answer)})", highlight=False)
        return 0
    try:
        daemon, log = launch(idle)
    except (OSError, wire.Unsafe) as error:
        raise CliError(f"cannot use the service folder: {error}") from error
    if not _answered(daemon, log, out):
        tail = log.read_text(errors="replace").strip().splitlines()[-5:]
        raise CliError(f"the service did not start; {log} ends with: {' | '.join(tail)}")
    return 0


def _answered(daemon: subprocess.Popen[bytes], log: Path, out: Any) -> bool:
    """Whether the launched service answers within :data:`START_WAIT` seconds (said with its
    pid, time and log); ``False`` as soon as its process exits."""
    began = time.monotonic()
    while time.monotonic() - began < START_WAIT:
        answer = ask(StatusAsked()) if wire.is_socket(socket_path()) else None
        if answer is not None:
            seconds = time.monotonic() - began
            out.print(
                f"service started ({_pid(answer)}) in {seconds:.1f} s; log {log}", highlight=False
            )
            return True
        if daemon.poll() is not None:
            break
        time.sleep(0.1)
    return False


def _pid(answer: Reply) -> str:
    """``pid N`` of a status answer, else what the answer says."""
    return f"pid {answer.pid}" if isinstance(answer, Status) else _why(answer)
