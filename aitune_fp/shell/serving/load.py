"""A bounded closed-loop load generator for a served model (the load benchmark's clients).

Rules:
- ``clients`` threads each keep one HTTP connection to the loopback address and send the
  next request as soon as the previous answer has been read; every thread stops at the
  deadline (``seconds``) or after ``max_requests`` requests in all, whichever comes first,
  and a request's own wait is bounded by ``timeout`` seconds;
- only ``127.0.0.1``/``localhost`` URLs are accepted: a load run never leaves the machine;
- every answer is counted: latencies (ms) of 200s, and the number of non-200 answers and of
  failed connections, so a run that went wrong says so instead of looking fast.
"""

from __future__ import annotations

import http.client
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from aitune_fp.core.stats.statistics import percentile

LOOPBACK = ("127.0.0.1", "localhost")


@dataclass(frozen=True, slots=True)
class LoadResult:
    """What a load run saw: per-request latencies of successes, failures, wall time, rows."""

    latencies_ms: tuple[float, ...]
    errors: int
    seconds: float
    rows_per_request: int

    @property
    def throughput(self) -> float:
        """Rows answered per second."""
        answered = len(self.latencies_ms) * self.rows_per_request
        return answered / self.seconds if self.seconds else 0.0

    def summary(self) -> dict[str, Any]:
        """Throughput (rows/s), p50/p95/p99 latency (ms), requests and errors."""
        lat = self.latencies_ms
        q = {f"p{p}_ms": (percentile(lat, p) if lat else None) for p in (50, 95, 99)}
        return {
            "requests": len(lat),
            "errors": self.errors,
            "throughput": self.throughput,
            **q,
        }


@dataclass(frozen=True, slots=True)
class _Target:
    """Where and what every client posts."""

    host: str
    port: int
    path: str
    body: bytes
    headers: dict[str, str]
    timeout: float

    def connect(self) -> http.client.HTTPConnection:
        """A new connection to the target."""
        return http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)


@dataclass(slots=True)
class _Tally:
    """What the clients share: the requests left (under ``lock``) and what they saw."""

    left: int
    deadline: float
    lock: threading.Lock = field(default_factory=threading.Lock)
    latencies: list[float] = field(default_factory=list)
    errors: list[int] = field(default_factory=list)

    def take(self) -> bool:
        """Whether one more request may go: before the deadline, within the budget."""
        if time.monotonic() >= self.deadline:
            return False
        with self.lock:
            if self.left <= 0:
                return False
            self.left -= 1
            return True


def _post(conn: http.client.HTTPConnection, target: _Target) -> int:
    """Post the target's body on ``conn``; the answer's status, once it is read whole."""
    conn.request("POST", target.path, target.body, target.headers)
    response = conn.getresponse()
    response.read()
    return response.status


def _client(target: _Target, tally: _Tally) -> None:
    conn = target.connect()
    try:
        while tally.take():
            start = time.perf_counter()
            try:
                status = _post(conn, target)
            except (OSError, http.client.HTTPException):
                tally.errors.append(1)
                conn.close()
                conn = target.connect()
                continue
            if status == 200:
                tally.latencies.append((time.perf_counter() - start) * 1000.0)
            else:
                tally.errors.append(1)
    finally:
        conn.close()


def closed_loop(
    url: str,
    body: bytes,
    content_type: str,
    *,
    clients: int,
    seconds: float,
    rows_per_request: int = 1,
    max_requests: int = 1_000_000,
    timeout: float = 30.0,
) -> LoadResult:
    """Run ``clients`` closed-loop clients posting ``body`` to ``url`` (module rules).

    >>> closed_loop("http://example.com:80/", b"", "application/json", clients=1, seconds=1)
    Traceback (most recent call last):
    ...
    ValueError: load runs stay on the loopback interface: got 'http://example.com:80/'
    >>> import socket
    >>> with socket.socket() as probe:  # a port nothing listens on
    ...     _ = probe.bind(("127.0.0.1", 0))
    ...     port = probe.getsockname()[1]
    >>> refused = closed_loop(f"http://127.0.0.1:{port}/", b"{}", "application/json",
    ...                       clients=2, seconds=5, max_requests=3)
    >>> refused.latencies_ms, refused.errors
    ((), 3)
    """
    parts = urlsplit(url)
    if parts.hostname not in LOOPBACK or parts.port is None:
        raise ValueError(f"load runs stay on the loopback interface: got {url!r}")
    headers = {"Content-Type": content_type}
    target = _Target(str(parts.hostname), parts.port, parts.path or "/", body, headers, timeout)
    start = time.monotonic()
    tally = _Tally(max_requests, start + seconds)
    threads: Sequence[threading.Thread] = [
        threading.Thread(target=_client, args=(target, tally), daemon=True) for _ in range(clients)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(seconds + timeout + 5.0)
    elapsed = time.monotonic() - start
    return LoadResult(tuple(tally.latencies), len(tally.errors), elapsed, rows_per_request)
