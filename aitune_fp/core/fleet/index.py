"""The fleet index (``fleet.json``) as data: one entry per job with its status.

Rules:
- an entry names its job (id, model, target, strategy, device), its status — one of
  ``complete`` (tuned and selected), ``failed`` (the tune ran and selected nothing, or its
  process kept crashing), ``interrupted`` (the plan stopped before the job finished, or it
  never started) or ``skipped`` (a complete run of the same entry and environment was
  kept) —, its entry key, the path of its ``run.json`` relative to the output folder (or
  ``None``), attempts, seconds and a one-line message;
- before a job finishes its entry is ``interrupted``: an index read after a crash of the
  plan never claims more than was done;
- the index also keeps the plan (as TOML) and the executor's name;
- :func:`encode_index` / :func:`decode_index` are inverse; decoding checks every field and
  its ``ValueError`` names the path of the first bad one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from aitune_fp.core.fleet.plan import STATUSES, Job, entry_key

SCHEMA_VERSION: Final = 1


@dataclass(frozen=True, slots=True)
class JobEntry:
    """One job's line in the index."""

    job: str
    model: str
    target: str
    strategy: str
    device: str
    status: str
    entry_key: str
    run: str | None = None
    attempts: int = 0
    seconds: float | None = None
    message: str = ""

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {', '.join(STATUSES)}, got {self.status!r}")


@dataclass(frozen=True, slots=True)
class FleetIndex:
    """Every job's entry, in plan order, with the plan text and the executor."""

    entries: tuple[JobEntry, ...]
    plan: str = ""
    executor: str = "local"

    def entry(self, job_id: str) -> JobEntry | None:
        """The entry of ``job_id``, if any."""
        return next((e for e in self.entries if e.job == job_id), None)


def not_finished(job: Job) -> JobEntry:
    """The entry of a job that has not finished (yet): ``interrupted``, no run.

    >>> from aitune_fp.core.fleet.plan import ModelEntry, TargetEntry
    >>> not_finished(Job(ModelEntry("mlp"), TargetEntry("cpu"), "min-latency")).status
    'interrupted'
    """
    return JobEntry(
        job=job.job_id,
        model=job.model.name,
        target=job.target.label,
        strategy=job.strategy,
        device=job.target.device,
        status="interrupted",
        entry_key=entry_key(job),
    )


def with_entry(index: FleetIndex, entry: JobEntry) -> FleetIndex:
    """``index`` with ``entry`` replacing the entry of the same job (appended when new)."""
    if index.entry(entry.job) is None:
        return replace(index, entries=(*index.entries, entry))
    return replace(index, entries=tuple(entry if e.job == entry.job else e for e in index.entries))


def encode_index(index: FleetIndex) -> dict[str, Any]:
    """A JSON-able dict of ``index``."""
    return {
        "schema_version": SCHEMA_VERSION,
        "executor": index.executor,
        "plan": index.plan,
        "jobs": [
            {
                "job": e.job,
                "model": e.model,
                "target": e.target,
                "strategy": e.strategy,
                "device": e.device,
                "status": e.status,
                "entry_key": e.entry_key,
                "run": e.run,
                "attempts": e.attempts,
                "seconds": e.seconds,
                "message": e.message,
            }
            for e in index.entries
        ],
    }


def _field(doc: Mapping[str, Any], key: str, kinds: tuple[type, ...], path: str) -> Any:
    value = doc.get(key)
    if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
        raise ValueError(f"{path}.{key}: expected {'/'.join(k.__name__ for k in kinds)}")
    return value


def _entry(doc: Any, path: str) -> JobEntry:
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: expected an object")
    text = {k: _field(doc, k, (str,), path) for k in ("job", "model", "target", "strategy")}
    try:
        return JobEntry(
            **text,
            device=_field(doc, "device", (str,), path),
            status=_field(doc, "status", (str,), path),
            entry_key=_field(doc, "entry_key", (str,), path),
            run=_field(doc, "run", (str, type(None)), path),
            attempts=_field(doc, "attempts", (int,), path),
            seconds=_field(doc, "seconds", (int, float, type(None)), path),
            message=_field(doc, "message", (str,), path),
        )
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None


def decode_index(doc: Any) -> FleetIndex:
    """The index ``doc`` holds; ``ValueError`` naming the first bad field.

    >>> decode_index(encode_index(FleetIndex(()))) == FleetIndex(())
    True
    >>> decode_index({"schema_version": 9})
    Traceback (most recent call last):
    ...
    ValueError: fleet index: schema_version 9 is not 1
    """
    if not isinstance(doc, dict):
        raise ValueError("fleet index: expected an object")
    if doc.get("schema_version") != SCHEMA_VERSION:
        raise ValueError(f"fleet index: schema_version {doc.get('schema_version')!r} is not 1")
    jobs = doc.get("jobs")
    if not isinstance(jobs, list):
        raise ValueError("fleet index.jobs: expected a list")
    return FleetIndex(
        entries=tuple(_entry(j, f"fleet index.jobs[{i}]") for i, j in enumerate(jobs)),
        plan=_field(doc, "plan", (str,), "fleet index"),
        executor=_field(doc, "executor", (str,), "fleet index"),
    )


def statuses(index: FleetIndex) -> Mapping[str, int]:
    """How many jobs have each status (every status present, zero included)."""
    return {s: sum(1 for e in index.entries if e.status == s) for s in STATUSES}


def job_entries(jobs: Sequence[Job]) -> tuple[JobEntry, ...]:
    """The not-finished entries of ``jobs``, in order."""
    return tuple(not_finished(j) for j in jobs)
