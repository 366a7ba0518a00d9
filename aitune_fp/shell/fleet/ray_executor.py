"""The ``ray`` executor: the plan's jobs as Ray tasks on a cluster (the ``ray`` extra).

Rules:
- ``ray`` is imported here only, when a plan runs on it; without it the executor is a
  :class:`~aitune_fp.shell.fleet.errors.FleetError` saying how to install it;
- with ``--address`` the plan joins that cluster; without it a local Ray is started for the
  run (and stopped after it);
- each job is one task running :func:`~aitune_fp.shell.fleet.job.run_job` (one ``tune``
  process) that asks for what its target needs, so a timed job has its device to itself:
  a CUDA target ``num_gpus=1`` (and ``accelerator_type`` when the target names one) and
  ``num_cpus`` from the target (default 1); a CPU target ``num_cpus`` from the target, by
  default every CPU of the cluster's largest node, so two CPU jobs never share a node;
- a worker lost mid-job (killed, its node gone) is retried by Ray up to the plan's
  ``retries`` times; then the job is ``failed`` with Ray's reason;
- results come back to the driver as values (the run's files as bytes), so the output
  folder and its one index live on the driver's machine whatever node ran the job;
- an interrupt cancels the tasks still pending.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from aitune_fp.shell.fleet.job import JobResult, JobSpec, run_job

LOCAL_OBJECT_STORE_BYTES = 512 * 1024**2
INSTALL_HINT = "the ray executor needs ray: pip install 'aitune_fp[ray]'"


def _task(spec: JobSpec) -> JobResult:
    """The body of one Ray task: run the job in this worker."""
    return run_job(spec)


def _largest_node_cpus(ray: Any) -> float:
    cpus = [n["Resources"].get("CPU", 0.0) for n in ray.nodes() if n.get("Alive")]
    return max(cpus, default=1.0) or 1.0


def task_options(spec: JobSpec, node_cpus: float) -> dict[str, Any]:
    """The Ray resource and retry options of ``spec``'s task.

    >>> task_options(JobSpec("j", "cuda", (), "cuda", accelerator_type="A10G"), 16.0)
    ... # doctest: +NORMALIZE_WHITESPACE
    {'num_cpus': 1.0, 'num_gpus': 1, 'max_retries': 2, 'retry_exceptions': False,
     'accelerator_type': 'A10G'}
    >>> task_options(JobSpec("j", "cpu", (), "cpu"), 16.0)["num_cpus"]
    16.0
    """
    default_cpus = 1.0 if spec.needs_gpu else node_cpus
    options: dict[str, Any] = {
        "num_cpus": spec.num_cpus if spec.num_cpus is not None else default_cpus,
        "num_gpus": 1 if spec.needs_gpu else 0,
        "max_retries": spec.retries,
        "retry_exceptions": False,
    }
    if spec.accelerator_type is not None:
        options["accelerator_type"] = spec.accelerator_type
    return options


def _lost(ray: Any, spec: JobSpec, error: BaseException) -> JobResult:
    text = str(error).strip().splitlines()
    reason = text[0] if text else type(error).__name__
    message = f"ray: {type(error).__name__} after {spec.retries + 1} attempts: {reason}"[:500]
    return JobResult(spec.job_id, "failed", spec.retries + 1, 0.0, message)


def _ray(address: str | None) -> tuple[Any, bool]:
    """The ``ray`` module, initialised, and whether it was initialised here."""
    try:
        import ray
    except ImportError:
        from aitune_fp.shell.fleet.errors import FleetError

        raise FleetError(INSTALL_HINT) from None
    started_here = not ray.is_initialized()
    if started_here:
        ray.init(
            address=address,
            include_dashboard=False,
            log_to_driver=False,
            object_store_memory=None if address else LOCAL_OBJECT_STORE_BYTES,
        )
    return ray, started_here


def _submitted(
    ray: Any, specs: Sequence[JobSpec], on_start: Callable[[JobSpec], None]
) -> dict[Any, JobSpec]:
    """Submit one task per spec, in order; each task's reference and its spec."""
    remote = ray.remote(_task)
    cpus = _largest_node_cpus(ray)
    refs: dict[Any, JobSpec] = {}
    for spec in specs:
        ref = remote.options(**task_options(spec, cpus)).remote(spec)
        refs[ref] = spec
        on_start(spec)
    return refs


def _run(
    specs: Sequence[JobSpec], on_start: Callable[[JobSpec], None], address: str | None
) -> Iterator[JobResult]:
    ray, started_here = _ray(address)
    pending: list[Any] = []
    try:
        refs = _submitted(ray, specs, on_start)
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                try:
                    yield ray.get(ref)
                except ray.exceptions.RayError as error:
                    yield _lost(ray, refs[ref], error)
    finally:
        for ref in pending:
            ray.cancel(ref, force=True)
        if started_here:
            ray.shutdown()


def ray_executor(
    address: str | None,
) -> Callable[[Sequence[JobSpec], Callable[[JobSpec], None]], Iterator[JobResult]]:
    """The executor running jobs on the Ray cluster at ``address`` (``None``: a local one)."""

    def run(specs: Sequence[JobSpec], on_start: Callable[[JobSpec], None]) -> Iterator[JobResult]:
        return _run(specs, on_start, address)

    return run
