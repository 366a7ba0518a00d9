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
from dataclasses import dataclass
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


def _client(
    host: str,
    port: int,
    path: str,
    body: bytes,
    headers: dict[str, str],
    deadline: float,
    budget: list[int],
    lock: threading.Lock,
    out: list[float],
    errors: list[int],
    timeout: float,
) -> None:
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        while time.monotonic() < deadline:
            with lock:
                if budget[0] <= 0:
                    return
                budget[0] -= 1
            start = time.perf_counter()
            try:
                conn.request("POST", path, body, headers)
                response = conn.getresponse()
                response.read()
            except (OSError, http.client.HTTPException):
                errors.append(1)
                conn.close()
                conn = http.client.HTTPConnection(host, port, timeout=timeout)
                continue
            if response.status == 200:
                out.append((time.perf_counter() - start) * 1000.0)
            else:
                errors.append(1)
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
    """Run ``clients`` closed-loop clients posting ``body`` to ``url`` (module rules)."""
    parts = urlsplit(url)
    if parts.hostname not in LOOPBACK or parts.port is None:
        raise ValueError(f"load runs stay on the loopback interface: got {url!r}")
    latencies: list[float] = []
    errors: list[int] = []
    budget, lock = [max_requests], threading.Lock()
    headers = {"Content-Type": content_type}
    start = time.monotonic()
    deadline = start + seconds
    threads: Sequence[threading.Thread] = [
        threading.Thread(
            target=_client,
            args=(
                parts.hostname,
                parts.port,
                parts.path or "/",
                body,
                headers,
                deadline,
                budget,
                lock,
                latencies,
                errors,
                timeout,
            ),
            daemon=True,
        )
        for _ in range(clients)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(seconds + timeout + 5.0)
    elapsed = time.monotonic() - start
    return LoadResult(tuple(latencies), len(errors), elapsed, rows_per_request)
