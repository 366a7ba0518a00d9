"""The ``local`` executor: the plan's jobs one after another on this machine.

Rules:
- jobs run in plan order, one at a time, each in its own process
  (:func:`~aitune_fp.shell.fleet.job.run_job`), so no two jobs are ever timed at once on
  one device and a crashing job ends only its own process;
- ``on_start`` is called just before a job starts; its result is yielded when it ends;
- an interrupt (Ctrl-C) stops the running job's process and propagates to the caller.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from aitune_fp.shell.fleet.job import JobResult, JobSpec, run_job


def run_local(specs: Sequence[JobSpec], on_start: Callable[[JobSpec], None]) -> Iterator[JobResult]:
    """Run every job of ``specs`` in order; yield each result as it ends.

    ``on_start`` hears of each job just before it runs (here two jobs kept without tuning,
    their stored environment being this machine's):

    >>> from aitune_fp.effects.machine.environment import environment_fingerprint
    >>> here = dict(environment_fingerprint("cpu"))
    >>> specs = [JobSpec(name, "cpu", ("tune",), "cpu", stored_environment=here) for name in "ab"]
    >>> for result in run_local(specs, lambda spec: print("start", spec.job_id)):
    ...     print(result.job_id, result.status)
    start a
    a skipped
    start b
    b skipped
    """
    for spec in specs:
        on_start(spec)
        yield run_job(spec)
