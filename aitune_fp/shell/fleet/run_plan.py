"""Run a plan: parse it, decide what to resume, hand the jobs to an executor, keep the index.

Rules:
- the plan file is parsed and checked whole (backend names against the registry) before
  any job starts; a bad plan is a :class:`FleetError` ``PLAN line N: field: problem``;
- relative factory paths (``models/tiny.py:build``) are relative to the plan file's folder;
- every job of the plan gets an entry in ``OUT/fleet.json`` before the first job starts
  (``interrupted`` until it finishes), and the index is rewritten after every job;
- resume follows :func:`~aitune_fp.core.fleet.resume.resume`: a job whose stored run is
  complete for the same entry is handed to its executor with that run's environment, and
  the job itself keeps the run when its environment is the same (``skipped``);
- a finished job's files replace its folder; a skipped job's folder is left as it is;
- an interrupt stops the executor, leaves the unfinished jobs ``interrupted`` in the index
  and propagates (exit 130 at the command line).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from pyrsistent import thaw

from aitune_fp.core.fleet.expand import expand
from aitune_fp.core.fleet.index import FleetIndex, JobEntry, not_finished, with_entry
from aitune_fp.core.fleet.plan import Job, Plan, entry_key
from aitune_fp.core.fleet.plan_parse import PlanError, parse_plan
from aitune_fp.core.fleet.plan_render import render_plan
from aitune_fp.core.fleet.progress import JobEvent
from aitune_fp.core.fleet.resume import resume
from aitune_fp.shell.fleet.errors import FleetError
from aitune_fp.shell.fleet.job import JobResult, JobSpec, tune_argv
from aitune_fp.shell.fleet.store import read_index, read_run, write_index, write_job_files

EXECUTORS = ("local", "ray")
Executor = Callable[[Sequence[JobSpec], Callable[[JobSpec], None]], Iterator[JobResult]]
EventSink = Callable[[JobEvent, FleetIndex], None]


def load_plan(path: str | Path) -> Plan:
    """The checked plan stored at ``path``; an unreadable or bad plan is a ``FleetError``.

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "plan.toml"
    >>> _ = path.write_text('strategies = ["min-latency"]\\n[[models]]\\nname = "mlp"\\n'
    ...                     '[[targets]]\\ndevice = "cpu"\\nbackends = ["eager"]\\n')
    >>> [m.name for m in load_plan(path).models]
    ['mlp']
    >>> _ = path.write_text('strategies = ["min-latency"]\\n[[models]]\\nname = "mlp"\\n'
    ...                     '[[targets]]\\ndevice = "cpu"\\nbackends = ["abacus"]\\n')
    >>> load_plan(path)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    aitune_fp.shell.fleet.errors.FleetError: .../plan.toml line 6: ...abacus...
    """
    from aitune_fp.effects.backends.registry import backend_types

    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as error:
        raise FleetError(f"cannot read {file}: {error.strerror or error}") from None
    try:
        return parse_plan(text, known_backends=frozenset(backend_types()))
    except PlanError as error:
        raise FleetError(f"{file} {error}") from None


def _factory(job: Job, base: Path) -> str | None:
    """The job's factory with a relative file path made absolute against ``base``."""
    if job.model.factory is None:
        return None
    source, _, name = job.model.factory.rpartition(":")
    is_file = source.endswith(".py") or "/" in source or "\\" in source
    if not is_file or Path(source).is_absolute():
        return job.model.factory
    return f"{(base / source).resolve()}:{name}"


def _stored_environment(
    job: Job, out: Path, previous: FleetIndex | None, force: bool
) -> Mapping[str, object] | None:
    """The environment of ``job``'s stored run when resume says to check it (else ``None``)."""
    prior = previous.entry(job.job_id) if previous is not None else None
    record = read_run(out / job.job_id / "run.json") if prior is not None else None
    complete = record is not None and record.selection is not None
    decision = resume(entry_key(job), prior, run_complete=complete, force=force)
    return thaw(record.environment) if decision.action == "check" and record else None


def job_spec(
    job: Job,
    base: Path,
    out: Path,
    previous: FleetIndex | None,
    *,
    force: bool,
    cache_dir: str | None,
) -> JobSpec:
    """The spec of ``job``, with the stored environment when its run may be kept.

    >>> from aitune_fp.core.fleet.plan import ModelEntry, TargetEntry
    >>> job = Job(ModelEntry("mlp"), TargetEntry("cpu", backends=("eager",)), "min-latency")
    >>> spec = job_spec(job, Path("plans"), Path("out"), None, force=False, cache_dir="/c")
    >>> spec.job_id, spec.device, spec.argv[-2:], spec.stored_environment
    ('mlp/cpu/min-latency', 'cpu', ('--cache-dir', '/c'), None)
    """
    return JobSpec(
        job_id=job.job_id,
        target=job.target.label,
        argv=tune_argv(job, _factory(job, base), cache_dir),
        device=job.target.device,
        retries=job.settings.retries,
        stored_environment=_stored_environment(job, out, previous, force),
        num_cpus=job.target.num_cpus,
        accelerator_type=job.target.accelerator_type,
        save=job.settings.save,
    )


def _specs(
    jobs: Iterable[Job], base: Path, out: Path, *, force: bool, cache_dir: str | None
) -> list[JobSpec]:
    """Every job's spec, resuming against the index already in ``out``."""
    previous = read_index(out)
    return [job_spec(j, base, out, previous, force=force, cache_dir=cache_dir) for j in jobs]


def _executor(name: str, address: str | None) -> Executor:
    if name == "local":
        from aitune_fp.shell.fleet.local import run_local

        return run_local
    if name == "ray":
        from aitune_fp.shell.fleet.ray_executor import INSTALL_HINT, ray_executor

        if importlib.util.find_spec("ray") is None:
            raise FleetError(INSTALL_HINT)

        return ray_executor(address)
    raise FleetError(f"unknown executor {name!r}; use {' or '.join(EXECUTORS)}")


def _finished(entry: JobEntry, result: JobResult, out: Path, job: Job) -> JobEntry:
    """The entry of a job after its result, its files written."""
    run = f"{job.job_id}/run.json"
    if result.status == "skipped":
        return replace(entry, status="skipped", run=run, message="kept: same entry and environment")
    if result.files:
        write_job_files(out / job.job_id, result.files)
    return replace(
        entry,
        status=result.status,
        run=run if result.has_run else None,
        attempts=result.attempts,
        seconds=round(result.seconds, 3),
        message=result.message,
    )


def _after(index: FleetIndex, job: Job, result: JobResult, out: Path) -> FleetIndex:
    """The index once ``job`` ended with ``result``: its files written, the index stored."""
    entry = index.entry(job.job_id) or not_finished(job)
    index = with_entry(index, _finished(entry, result, out, job))
    write_index(out, index)
    return index


def run_plan(
    plan_path: str | Path,
    out: str | Path,
    *,
    executor: str = "local",
    address: str | None = None,
    force: bool = False,
    cache_dir: str | None = None,
    on_event: EventSink | None = None,
) -> FleetIndex:
    """Run every job of the plan at ``plan_path`` into ``out``; returns the final index.

    The plan is read and checked before any job starts:

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> run_plan(folder / "missing.toml", folder / "out")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    aitune_fp.shell.fleet.errors.FleetError: cannot read .../missing.toml: No such file or directory
    >>> (folder / "out").exists()
    False
    """
    plan = load_plan(plan_path)
    run = _executor(executor, address)
    folder = Path(out)
    jobs = {job.job_id: job for job in expand(plan)}
    base = Path(plan_path).resolve().parent
    specs = _specs(jobs.values(), base, folder, force=force, cache_dir=cache_dir)
    index = FleetIndex(tuple(not_finished(j) for j in jobs.values()), render_plan(plan), executor)
    write_index(folder, index)
    sink = on_event or (lambda event, index: None)

    def started(spec: JobSpec) -> None:
        sink(JobEvent("started", spec.job_id, spec.target), index)

    for result in run(specs, started):
        index = _after(index, jobs[result.job_id], result, folder)
        job = jobs[result.job_id]
        sink(JobEvent("finished", job.job_id, job.target.label, result.status), index)
    return index
