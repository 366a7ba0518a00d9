"""One fleet job: one ``aitune-fp tune`` run in its own process, its files as the result.

Rules:
- a job is ``python -m aitune_fp tune FACTORY --name … --strategy … --device … --out TMP``
  (demo models through :mod:`aitune_fp.models.factories`), plus the ``--search``,
  ``--precision``, ``--max-drop`` and ``--min-top1`` flags of the precision choices the
  plan states for it (:attr:`~aitune_fp.core.fleet.plan.Job.tuning`), run with the
  interpreter of the process running the job, its output written to a private temporary
  folder; a crash of the tune (a segfault, ``os._exit``, the OOM killer) ends that process only;
- the tune's process dies with the process that started it (``PR_SET_PDEATHSIG`` on Linux),
  so a lost worker or a killed plan leaves no tune running;
- exit 0 with a ``run.json`` is ``complete``; any other exit is ``failed`` with the tune's
  own one-line error; a death by signal other than an interrupt is retried up to
  ``retries`` times, then ``failed``; exit 130 or SIGINT is ``interrupted``;
- when the job carries a stored run's environment, it first compares it with its own
  environment's fingerprint and, when they are the same, returns ``skipped`` without tuning;
- the result holds the files the tune wrote (``run.json``, ``report.md``, ``plot.png``,
  and the saved tuned module under ``saved/`` when the plan says ``save = true``) and its
  log (``tune.log``) as bytes, so whoever receives the result — this process or a
  Ray driver on another machine — writes them where they belong.
"""

from __future__ import annotations

import ctypes
import functools
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from aitune_fp.core.fleet.plan import Job
from aitune_fp.core.fleet.resume import same_environment

Status = Literal["complete", "failed", "interrupted", "skipped"]
DEMO_FACTORIES = "aitune_fp.models.factories"
LOG_NAME = "tune.log"
SAVED_NAME = "saved"


@dataclass(frozen=True, slots=True)
class JobSpec:
    """Everything a worker needs to run one job (picklable, no paths of the driver's)."""

    job_id: str
    target: str
    argv: tuple[str, ...]
    device: str
    retries: int = 2
    stored_environment: Mapping[str, object] | None = None
    num_cpus: float | None = None
    accelerator_type: str | None = None
    env: tuple[tuple[str, str], ...] = ()
    save: bool = False

    @property
    def needs_gpu(self) -> bool:
        """Whether the job's device is a CUDA device."""
        return self.device.startswith("cuda")


@dataclass(frozen=True, slots=True)
class JobResult:
    """How a job ended and the files it produced (relative name → bytes)."""

    job_id: str
    status: Status
    attempts: int
    seconds: float
    message: str = ""
    files: tuple[tuple[str, bytes], ...] = ()

    @property
    def has_run(self) -> bool:
        """Whether the files include a ``run.json``."""
        return any(name == "run.json" for name, _ in self.files)


def tune_argv(
    job: Job, factory: str | None = None, cache_dir: str | None = None
) -> tuple[str, ...]:
    """The ``aitune-fp`` arguments of ``job`` (without ``--out``).

    ``factory`` replaces the model's own factory (e.g. made absolute by the caller).

    >>> from aitune_fp.core.fleet.plan import ModelEntry, TargetEntry
    >>> tune_argv(Job(ModelEntry("mlp"), TargetEntry("cpu", backends=("eager",)), "min-latency"))
    ... # doctest: +NORMALIZE_WHITESPACE
    ('tune', 'aitune_fp.models.factories:mlp', '--name', 'mlp', '--strategy', 'min-latency',
     '--device', 'cpu', '--backends', 'eager')
    """
    source = factory or job.model.factory or f"{DEMO_FACTORIES}:{job.model.name}"
    argv = ["tune", source, "--name", job.model.name, "--strategy", job.strategy]
    argv += ["--device", job.target.device]
    if job.backends is not None:
        argv += ["--backends", ",".join(job.backends)]
    if job.max_batch_size is not None:
        argv += ["--max-batch-size", str(job.max_batch_size)]
    for shape in job.model.input_shapes:
        argv += ["--input-shape", "x".join(map(str, shape))]
    for dtype in job.model.dtypes:
        argv += ["--dtype", dtype]
    if cache_dir is not None:
        argv += ["--cache-dir", cache_dir]
    if not job.settings.plot:
        argv.append("--no-plot")
    return (*argv, *job.tuning.argv())


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    """Ask Linux to kill this process when its parent dies (no-op elsewhere)."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


@functools.lru_cache(maxsize=8)
def _fingerprint(device: str) -> Mapping[str, Any]:
    from aitune_fp.effects.machine.environment import environment_fingerprint

    return environment_fingerprint(device)


def _error_line(log: str) -> str:
    lines = [ln for ln in log.splitlines() if ln.startswith("aitune-fp: ")]
    tail = [ln for ln in log.splitlines() if ln.strip()]
    return (lines or tail or [""])[-1].removeprefix("aitune-fp: error: ")[:500]


def _collect(folder: Path) -> tuple[tuple[str, bytes], ...]:
    return tuple(
        (str(p.relative_to(folder)), p.read_bytes())
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    )


def _command(spec: JobSpec, out: Path) -> list[str]:
    """The tune's command line, writing to ``out`` (and saving under it when asked)."""
    save = ["--save", str(out / SAVED_NAME)] if spec.save else []
    return [sys.executable, "-m", "aitune_fp", *spec.argv, "--out", str(out), *save]


def _attempt(spec: JobSpec, tmp: Path) -> tuple[int, tuple[tuple[str, bytes], ...], str]:
    """One run of the tune: its return code, its files and its log."""
    import os

    out = tmp / "run"
    log_path = tmp / LOG_NAME
    with log_path.open("wb") as log:
        code = subprocess.run(
            _command(spec, out),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **dict(spec.env)},
            preexec_fn=_die_with_parent,
            check=False,
        ).returncode
    text = log_path.read_text(encoding="utf-8", errors="replace")
    files = (*_collect(out), (LOG_NAME, log_path.read_bytes())) if out.is_dir() else ()
    return code, files or ((LOG_NAME, log_path.read_bytes()),), text


def _ended(
    spec: JobSpec,
    code: int,
    attempts: int,
    seconds: float,
    files: tuple[tuple[str, bytes], ...],
    log: str,
) -> JobResult | None:
    """How an attempt that exited with ``code`` ends the job (``None``: run it again).

    >>> spec = JobSpec("j", "cpu", ("tune",), "cpu", retries=1)
    >>> _ended(spec, -9, 1, 1.0, (), "") is None
    True
    >>> _ended(spec, -9, 2, 1.0, (), "").message
    'the tune process died of SIGKILL 2 times'
    >>> _ended(spec, 130, 1, 1.0, (), "").status, _ended(spec, 0, 1, 1.0, (), "").status
    ('interrupted', 'failed')
    >>> _ended(spec, 2, 1, 1.0, (), "aitune-fp: error: no such model").message
    'no such model'
    """
    if code in (130, -signal.SIGINT):
        return JobResult(spec.job_id, "interrupted", attempts, seconds, "interrupted", files)
    if code < 0 and attempts <= spec.retries:
        return None
    if code < 0:
        name = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
        message = f"the tune process died of {name} {attempts} times"
        return JobResult(spec.job_id, "failed", attempts, seconds, message, files)
    result = JobResult(spec.job_id, "complete", attempts, seconds, "", files)
    if code == 0 and result.has_run:
        return result
    message = _error_line(log) or f"the tune exited with {code}"
    return JobResult(spec.job_id, "failed", attempts, seconds, message, files)


def run_job(spec: JobSpec) -> JobResult:
    """Run ``spec`` to its end by the rules above.

    A job whose stored environment is this machine's is skipped without tuning:

    >>> here = dict(_fingerprint("cpu"))
    >>> done = run_job(JobSpec("mlp/cpu", "cpu", ("tune",), "cpu", stored_environment=here))
    >>> done.status, done.attempts, done.message
    ('skipped', 0, 'kept')
    """
    began = time.perf_counter()
    if spec.stored_environment is not None and same_environment(
        spec.stored_environment, _fingerprint(spec.device)
    ):
        return JobResult(spec.job_id, "skipped", 0, time.perf_counter() - began, "kept")
    attempts = 0
    while True:
        attempts += 1
        with tempfile.TemporaryDirectory(prefix="aitune_fp_job_") as folder:
            code, files, log = _attempt(spec, Path(folder))
        ended = _ended(spec, code, attempts, time.perf_counter() - began, files, log)
        if ended is not None:
            return ended
