"""The serving plan: how a server batches requests for a tuned model, derived from the tune.

Rules:
- the *tuned batch size* is the selection's batch size; the serving maximum batch (in rows)
  is the tuned batch size, except under a latency-budget strategy (the run record's
  strategy has a ``budget_ms`` parameter), where it is the largest batch size the winner
  was measured at whose mean latency is within the budget (never below the tuned one);
- the batch wait timeout (how long a batch's first request waits for more to arrive) is
  half the measured mean latency at the serving maximum batch, at least
  :data:`MIN_WAIT_MS` (a request's trip through the HTTP stack) and at most
  :data:`MAX_WAIT_MS`; under a budget it is also at most the budget's slack, ``budget -
  latency`` (never negative), so that waiting plus running a full batch stays within it;
- explicit overrides (``max_batch_size``, ``batch_wait_ms``) win over both rules and the
  plan's ``rule`` line says so;
- the preferred batch sizes (Triton's ``preferred_batch_size``) are the tuned batch size
  and the serving maximum.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from aitune_fp.core.stats.statistics import mean

MIN_WAIT_MS: Final = 1.0
MAX_WAIT_MS: Final = 50.0


@dataclass(frozen=True, slots=True)
class ServingPlan:
    """Dynamic batching for one served model (see the module rules).

    >>> p = plan_from_tune("onnxruntime", 8, 4.0)
    >>> p.max_batch_size, p.batch_wait_ms, p.preferred_batch_sizes
    (8, 2.0, (8,))
    """

    backend: str
    batch_size: int
    max_batch_size: int
    batch_wait_ms: float
    latency_ms: float
    budget_ms: float | None
    rule: str

    def __post_init__(self) -> None:
        if self.batch_size < 1 or self.max_batch_size < 1:
            raise ValueError(
                f"batch sizes must be >= 1, got {self.batch_size} and {self.max_batch_size}"
            )
        if not self.batch_wait_ms >= 0.0:
            raise ValueError(f"batch_wait_ms must be >= 0, got {self.batch_wait_ms!r}")

    @property
    def preferred_batch_sizes(self) -> tuple[int, ...]:
        """The tuned batch size and the serving maximum, ascending, without repeats."""
        return tuple(sorted({min(self.batch_size, self.max_batch_size), self.max_batch_size}))

    @property
    def batch_wait_us(self) -> int:
        """The batch wait timeout in whole microseconds (Triton's unit)."""
        return round(self.batch_wait_ms * 1000.0)

    def to_json(self) -> dict[str, Any]:
        """The plan as a JSON-able dict (what ``GET /info`` shows)."""
        return {
            "backend": self.backend,
            "batch_size": self.batch_size,
            "max_batch_size": self.max_batch_size,
            "preferred_batch_sizes": list(self.preferred_batch_sizes),
            "batch_wait_ms": self.batch_wait_ms,
            "latency_ms": self.latency_ms,
            "budget_ms": self.budget_ms,
            "rule": self.rule,
        }


def budget_of(strategy: Mapping[str, Any] | None) -> float | None:
    """The latency budget in ms of a run record's strategy config, ``None`` without one.

    >>> budget_of({"strategy": "latency_budget", "parameters": {"budget_ms": 5.0}})
    5.0
    >>> budget_of({"strategy": "max_throughput", "parameters": {}}) is None
    True
    """
    params = (strategy or {}).get("parameters")
    value = params.get("budget_ms") if isinstance(params, Mapping) else None
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    return None


def mean_latencies(latencies_ms: Mapping[int, Sequence[float]]) -> dict[int, float]:
    """The mean latency per batch size of a profile's samples (batch sizes without samples
    left out)."""
    return {int(bs): mean(list(s)) for bs, s in latencies_ms.items() if len(s) > 0}


def wait_rule(latency_ms: float, budget_ms: float | None) -> float:
    """The batch wait timeout in ms for a full batch taking ``latency_ms`` (module rules).

    >>> wait_rule(10.0, None), wait_rule(0.2, None), wait_rule(400.0, None)
    (5.0, 1.0, 50.0)
    >>> wait_rule(4.0, 5.0), wait_rule(6.0, 5.0)
    (1.0, 0.0)
    """
    wait = min(max(latency_ms / 2.0, MIN_WAIT_MS), MAX_WAIT_MS)
    if budget_ms is not None:
        wait = min(wait, max(budget_ms - latency_ms, 0.0))
    return round(wait, 3)


def plan_from_tune(
    backend: str,
    batch_size: int,
    latency_ms: float,
    *,
    strategy: Mapping[str, Any] | None = None,
    latencies_ms: Mapping[int, float] | None = None,
    max_batch_size: int | None = None,
    batch_wait_ms: float | None = None,
) -> ServingPlan:
    """The serving plan for a winner ``backend`` tuned at ``batch_size`` with mean latency
    ``latency_ms`` there; ``latencies_ms`` is the winner's mean latency per measured batch
    size (from the run record), ``strategy`` the record's strategy config.

    >>> plan_from_tune("ort", 4, 2.0, strategy={"parameters": {"budget_ms": 5.0}},
    ...                latencies_ms={1: 1.0, 4: 2.0, 8: 4.5, 16: 9.0}).max_batch_size
    8
    """
    budget = budget_of(strategy)
    measured = dict(latencies_ms or {})
    measured.setdefault(batch_size, latency_ms)
    largest = batch_size
    if budget is not None:
        fitting = [bs for bs, ms in measured.items() if ms <= budget and bs >= batch_size]
        largest = max(fitting, default=batch_size)
    chosen = max_batch_size if max_batch_size is not None else largest
    at_max = measured.get(chosen, latency_ms * chosen / batch_size)
    parts = [
        f"max batch {chosen}: "
        + (
            "given"
            if max_batch_size is not None
            else "the tuned batch size"
            if budget is None
            else f"the largest batch size within the {budget:g} ms budget"
        )
    ]
    if batch_wait_ms is not None:
        wait = float(batch_wait_ms)
        parts.append(f"batch wait {wait:g} ms: given")
    else:
        wait = wait_rule(at_max, budget)
        slack = "" if budget is None else f", at most the budget's slack {budget - at_max:.3g} ms"
        parts.append(
            f"batch wait {wait:g} ms: half the {at_max:.3g} ms a full batch takes, "
            f"within {MIN_WAIT_MS:g}..{MAX_WAIT_MS:g} ms{slack}"
        )
    return ServingPlan(backend, batch_size, chosen, wait, at_max, budget, "; ".join(parts))
