"""Files a run leaves behind: ``run.json``, ``report.md`` and ``plot.png`` in one folder.

Rules: the folder is created when missing and existing files are replaced, each one
atomically (a temporary file in the same folder, then a rename), so a full disk or a crash
never leaves a half-written file or destroys the previous one; the plot is optional
(``plot=False``) and a missing matplotlib only skips it with a warning, because the record
and the report are what matter; written paths are returned in that order, with the record
as written. The plot is drawn first and ``run.json`` last: the time the plot took is the
wall account's ``plot`` stage (:func:`~aitune_fp.core.record.wall.with_stage`), so the
account in ``run.json`` and ``report.md`` runs to the record being written. A decision
cache hit's plot is drawn in the background once ``run.json`` is written
(:mod:`aitune_fp.cli.plot_later`), off the command's wall. A tune's own ``run.json`` is
already on disk when its files are written (``recorded``: written by the tuner's one
writer, :class:`~aitune_fp.shell.journal.Recorder`): it is not written again, and its
plot is drawn after ``report.md``, off the record's wall account.
:func:`folder_problem` checks an output folder before any work.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from rich.console import Console

from aitune_fp.core.record.run_record import RunRecord, dumps, loads
from aitune_fp.core.record.wall import with_stage
from aitune_fp.core.report.markdown import render_markdown
from aitune_fp.effects.atomic import write_text


class CliError(Exception):
    """An expected failure of a command: its message is the one line the user sees."""


def read_record(path: str | Path) -> RunRecord:
    """The run record stored at ``path``, or a :class:`CliError` saying what is wrong."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as error:
        raise CliError(f"cannot read {file}: {error.strerror or error}") from None
    try:
        return loads(text)
    except ValueError as error:
        raise CliError(f"{file}: {error}") from None


def write_record(record: RunRecord, path: str | Path) -> Path:
    """Write ``record`` as JSON to ``path`` (parent folders created)."""
    return write_text(Path(path), dumps(record))


def folder_problem(path: str | Path, option: str) -> str | None:
    """Why ``path`` cannot be an output folder (a file, not creatable, not writable), or
    ``None``; a missing folder is created.

    >>> import tempfile
    >>> folder_problem(tempfile.mkdtemp(), "--out") is None
    True
    """
    import tempfile

    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        return f"{option} {folder} exists and is not a folder"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".aitune_fp-probe-"):
            pass
    except OSError as error:
        return f"{option} {folder} cannot be written: {error.strerror or error}"
    return None


def write_plot(record: RunRecord, path: str | Path, console: Console) -> Path | None:
    """Draw the plot to ``path``; ``None`` (and a warning) when matplotlib is missing."""
    from aitune_fp.cli.plot import plot_run

    try:
        return plot_run(record, path)
    except ImportError as error:
        console.print(f"warning: no plot: {error}", markup=False, highlight=False)
        return None


def write_run(
    record: RunRecord,
    folder: str | Path,
    console: Console,
    *,
    plot: bool = True,
    recorded: bool = False,
) -> tuple[RunRecord, list[Path]]:
    """Write ``plot.png`` (optionally), then ``report.md`` and ``run.json`` under
    ``folder`` (see the rules); the record as written and the paths (``run.json`` first).
    A decision cache hit's plot is drawn in the background after the record
    (:mod:`aitune_fp.cli.plot_later`): not on the list, one line says so. ``recorded``:
    ``record`` is already ``folder/run.json`` (a tune's), not written again."""
    from aitune_fp.cli.plot_later import is_hit

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    if plot and is_hit(record):
        return record, _written_then_drawn(record, out, console, recorded)
    if recorded:
        return record, _reported(record, out, console, plot)
    drawn = None
    if plot:
        record, drawn = _plotted(record, out, console)
    report = _report(record, out)
    written = [write_record(record, out / "run.json"), report]
    return record, written + ([drawn] if drawn is not None else [])


def _reported(record: RunRecord, out: Path, console: Console, plot: bool) -> list[Path]:
    """A tune's files around its ``run.json`` (on disk already): ``report.md`` (its
    ``OSError`` first: a full disk is said as such), then ``run.json`` checked (an
    ``OSError`` when the file there is not ``record``: the tuner could not write it),
    then ``plot.png`` (optionally)."""
    report = _report(record, out)
    written = [_on_disk(record, out / "run.json"), report]
    drawn = write_plot(record, out / "plot.png", console) if plot else None
    return written + ([drawn] if drawn is not None else [])


def _written_then_drawn(
    record: RunRecord, out: Path, console: Console, recorded: bool = False
) -> list[Path]:
    """A decision cache hit's files: ``run.json`` (unless ``recorded``: on disk already)
    and ``report.md`` now, ``plot.png`` drawn in the background after them (one line
    says so)."""
    from aitune_fp.cli.plot_later import draw_later

    report = _report(record, out)
    path = out / "run.json"
    written = [_on_disk(record, path) if recorded else write_record(record, path), report]
    draw_later(written[0], out / "plot.png")
    console.print(
        f"{out / 'plot.png'}: drawn in the background (a decision cache hit)",
        markup=False,
        highlight=False,
    )
    return written


def _on_disk(record: RunRecord, path: Path) -> Path:
    """``path``, when it holds ``record`` (else an ``OSError`` saying it does not)."""
    try:
        same = loads(path.read_text(encoding="utf-8")) == record
    except ValueError:
        same = False
    if not same:
        raise OSError(f"{path} does not hold this run's record (the tune could not write it)")
    return path


def _plotted(record: RunRecord, out: Path, console: Console) -> tuple[RunRecord, Path | None]:
    """``plot.png`` drawn now: the record with its wall's ``plot`` stage, and the plot's path
    (``None`` when it could not be drawn)."""
    began = time.monotonic()
    drawn = write_plot(record, out / "plot.png", console)
    lap = time.monotonic() - began
    return dataclasses.replace(record, wall=with_stage(record.wall, "plot", lap)), drawn


def _report(record: RunRecord, out: Path) -> Path:
    """``report.md`` in ``out``."""
    return write_text(out / "report.md", render_markdown(record))
