"""Write a run record so that the file on disk is always a whole, valid record, from the
one place a tune writes it (:class:`Recorder`).

Rules: a tune's record is derived from its session
(:func:`~aitune_fp.core.record.derive.record_of`, with what only the shell knows:
:func:`~aitune_fp.shell.recording.env_of`) and written by :meth:`Recorder.record` alone:
``interrupted`` once before anything is built (:meth:`Recorder.begin`) and after each
step of the session (:meth:`Recorder.journal`, told by the interpreter), ``complete`` at
the end; the record goes to a temporary file next to the
target and is renamed over it (:mod:`aitune_fp.effects.atomic`), so a crash, a signal or
a full disk leaves the previous record intact; a failed write is a warning (the run goes
on, the record is still returned in memory), never an exception.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from aitune_fp.core.record.derive import record_of
from aitune_fp.core.record.run_record import RunRecord, dumps
from aitune_fp.core.records import TuneError
from aitune_fp.core.session import Session, SessionPlan
from aitune_fp.effects.atomic import write_text
from aitune_fp.shell.recording import Heading, env_of
from aitune_fp.shell.setup import RunState, Setup
from aitune_fp.shell.wall_clock import Stopwatch

log = logging.getLogger("aitune_fp")


def write_record(record: RunRecord, path: Path) -> bool:
    """Write ``record`` to ``path`` atomically; ``False`` (and a warning) if it failed.

    >>> import tempfile
    >>> from aitune_fp.core.record.run_record import loads
    >>> record = RunRecord("mlp", "cpu", {"strategy": "max"}, None, (), None, None, {}, {}, None)
    >>> path = Path(tempfile.mkdtemp()) / "run.json"
    >>> write_record(record, path), loads(path.read_text()) == record
    (True, True)
    >>> write_record(record, path / "inside-a-file.json"), loads(path.read_text()) == record
    (False, True)
    """
    try:
        write_text(path, dumps(record))
        return True
    except OSError as error:
        log.warning("could not write %s: %s (the previous file is kept)", path, error)
        return False


@dataclass(frozen=True, slots=True)
class Recorder:
    """Where a tune's record goes (``target``; ``None``: kept in memory only) and what it
    is derived with: the setup, the heading shared by every record of the session, and
    the clock whose account is its wall."""

    setup: Setup
    heading: Heading
    clock: Stopwatch
    target: Path | None = None

    def record(
        self, run: RunState, status: str = "interrupted", unmade: TuneError | None = None
    ) -> RunRecord:
        """The record of ``run``'s session now, written to the target when there is one
        (``unmade``: why the winner could not be made here, the run's error instead)."""
        if run.session is None:
            raise ValueError("a run's record is derived from its session: none has started")
        configs = run.configs.values()
        env = env_of(self.setup, self.heading, configs, status, self.clock.account(), unmade)
        record = record_of(run.session, env)
        if self.target is not None:
            write_record(record, self.target)
        return record

    def begin(self, plan: SessionPlan) -> None:
        """This run's record on disk from now on, before anything is built (a file left
        by a previous run is never taken for this one's)."""
        self.journal(RunState(session=Session(plan)))

    def journal(self, run: RunState) -> None:
        """The partial record on disk (nothing without a target: no one reads it)."""
        if self.target is not None:
            self.record(run)
