"""Run a backend's build as an effect that never raises for a backend problem.

Rules:
- ``work_dir/build.log`` is rewritten for every build: a header naming the backend, what
  the build printed (stdout, stderr, Python warnings, ``torch`` log records — torch's own
  stderr handlers are detached meanwhile —, lines the backend logged itself) and, on
  failure, the full traceback;
- an exception becomes ``BackendFailure(backend, "build", "<Type>: <first line>")`` with
  the log's path appended; ``KeyboardInterrupt`` and other non-``Exception`` errors pass;
- a backend that cannot run here fails at once with its reason, and nothing is written;
- the parts a build times with :meth:`BuildLog.timed` (``export``, ``compile``) land in the
  built backend's ``info["stage_seconds"]`` (seconds by part; the run record's
  ``stage_seconds``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import logging
import traceback
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import torch
from returns.io import IOFailure, IOResult, IOSuccess

from aitune_fp.core.records import BackendFailure
from aitune_fp.effects.backends._build_log import BuildLog
from aitune_fp.effects.backends.base import Backend, Built
from aitune_fp.effects.inputs.containers import register_known

__all__ = ["BuildLog", "available_build", "first_line", "guarded_build", "unavailable"]
_MESSAGE_CHARS = 400


def first_line(error: BaseException) -> str:
    """``Type: first non-empty line of the message``, shortened to a few hundred characters.

    >>> first_line(ValueError("\\n  bad shape (2, 3)\\nmore detail"))
    'ValueError: bad shape (2, 3)'
    """
    lines = [ln.strip() for ln in str(error).splitlines() if ln.strip()]
    text = f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__
    return text if len(text) <= _MESSAGE_CHARS else text[: _MESSAGE_CHARS - 1] + "…"


def unavailable(backend: str, reason: str) -> IOResult[Built, BackendFailure]:
    """The build result of a backend that cannot run here: a failure with ``reason``.

    >>> from aitune_fp.shell.io import perform
    >>> perform(unavailable("tensorrt", "needs a CUDA device")).failure().describe()
    'tensorrt failed at build: needs a CUDA device'
    """
    return IOFailure(BackendFailure(backend, "build", reason))


def _detach_torch_handlers() -> dict[logging.Logger, list[logging.Handler]]:
    """Remove the handlers torch put on its own loggers (they print to stderr); return them."""
    detached: dict[logging.Logger, list[logging.Handler]] = {}
    for name, logger in list(logging.Logger.manager.loggerDict.items()):
        if not isinstance(logger, logging.Logger) or name.split(".")[0] != "torch":
            continue
        if logger.handlers:
            detached[logger] = list(logger.handlers)
            for h in detached[logger]:
                logger.removeHandler(h)
    detached.setdefault(logging.getLogger("torch"), [])
    return detached


@contextlib.contextmanager
def _captured(sink: io.StringIO) -> Iterator[None]:
    """Route stdout, stderr, warnings and ``torch``/root log records into ``sink``."""
    handler = logging.StreamHandler(sink)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    handler.setLevel(logging.INFO)
    detached = _detach_torch_handlers()
    loggers = [logging.getLogger(), *detached]
    for logger in loggers:
        logger.addHandler(handler)
    try:
        with (
            contextlib.redirect_stdout(sink),
            contextlib.redirect_stderr(sink),
            warnings.catch_warnings(record=True) as caught,
        ):
            warnings.simplefilter("always")
            try:
                yield
            finally:
                for w in caught:
                    sink.write(f"warning: {w.category.__name__}: {w.message}\n")
    finally:
        for logger in loggers:
            logger.removeHandler(handler)
        for logger, handlers in detached.items():
            for h in handlers:
                logger.addHandler(h)


def guarded_build(
    backend: str, work_dir: Path, build: Callable[[BuildLog], Built]
) -> IOResult[Built, BackendFailure]:
    """Run ``build`` with its output captured into ``work_dir/build.log``; errors are values.

    >>> import tempfile
    >>> from aitune_fp.shell.io import perform
    >>> def broken(log: BuildLog) -> Built:
    ...     raise RuntimeError("export failed\\ntraceback details")
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     result = guarded_build("demo", Path(tmp), broken)
    ...     logged = "traceback details" in (Path(tmp) / "build.log").read_text()
    >>> perform(result).failure().message.split(" (full log")[0], logged
    ('RuntimeError: export failed', True)
    """
    work_dir.mkdir(parents=True, exist_ok=True)
    log_path = work_dir / "build.log"
    log = BuildLog()
    sink = io.StringIO()
    outcome: IOResult[Built, BackendFailure]
    try:
        register_known()  # a worker forked before the model's cache classes were seen
        with _captured(sink):
            built = build(log)
        if log.seconds:
            stages = {**built.info.get("stage_seconds", {}), **log.seconds}
            built = dataclasses.replace(built, info={**built.info, "stage_seconds": stages})
        outcome = IOSuccess(built)
        tail = "build succeeded"
    except Exception as error:
        message = f"{first_line(error)} (full log: {log_path})"
        outcome = IOFailure(BackendFailure(backend, "build", message))
        tail = "build failed:\n" + "".join(traceback.format_exception(error))
    parts = [f"== build of {backend}", sink.getvalue().rstrip(), log.text(), tail]
    log_path.write_text("\n".join(p for p in parts if p) + "\n", encoding="utf-8")
    return outcome


def available_build(
    backend: Backend, device: torch.device, work_dir: Path, build: Callable[[BuildLog], Built]
) -> IOResult[Built, BackendFailure]:
    """``guarded_build`` of ``build`` when ``backend`` can run on ``device``; otherwise the
    backend's reason as a build failure at once, with nothing written.

    >>> import tempfile
    >>> from aitune_fp.shell.io import perform
    >>> from aitune_fp.effects.backends.trt import TensorRT
    >>> def never(log: BuildLog) -> Built:
    ...     raise AssertionError("an unavailable backend is never built")
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     result = available_build(TensorRT(), torch.device("cpu"), Path(tmp) / "w", never)
    ...     written = (Path(tmp) / "w").exists()
    >>> perform(result).failure().message, written
    ('needs a CUDA device', False)
    """
    reason = backend.unavailable_reason(device)
    if reason is not None:
        return unavailable(backend.describe(), reason)
    return guarded_build(backend.describe(), work_dir, build)
