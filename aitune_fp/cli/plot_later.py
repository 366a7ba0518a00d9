"""A decision cache hit's ``plot.png``, drawn by a background process after the record.

Rules:
- a tune whose record says it was a decision cache hit (:func:`is_hit`: ``provenance.
  decision`` starts ``decision cache hit``, ``Provenance.cache_hit``) does not draw its
  plot before it returns: drawing the four panels took 1.2–2.5 s on this project's 2-core
  machine, more than the rest of a hit's work after the re-verification;
- instead, once ``run.json`` and ``report.md`` are written, :func:`draw_later` removes
  the folder's previous ``plot.png`` (it showed another run) and starts
  ``python -m aitune_fp.cli.plot_later RUN_JSON PLOT_PNG``, detached (its own session,
  no terminal, the same interpreter and module search path), which draws the record it
  reads with :func:`~aitune_fp.cli.plot.plot_run` and writes the PNG atomically; the
  command says so in one line and does not wait;
- the plot is the same one a drawing in the tune process would make (the same record);
  it appears a few seconds after the command returned; when it cannot be drawn (no
  matplotlib, a record that cannot be read) there is no ``plot.png`` and the background
  process exits 1 (``aitune-fp report RUN_JSON --plot FILE`` draws it by hand);
- the record's wall account has no ``plot`` stage on a hit: nothing of the plot is on
  the command's wall.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

from aitune_fp.core.record.run_record import RunRecord, loads


def is_hit(record: RunRecord) -> bool:
    """Whether ``record`` is a decision cache hit's (its decision line says so).

    >>> r = RunRecord("m", "cpu", {}, None, (), None, None, {}, {}, None)
    >>> is_hit(r)
    False
    """
    return record.provenance.cache_hit


def draw_later(record_path: Path, plot_path: Path) -> subprocess.Popen[bytes]:
    """Start the background drawing of ``record_path`` into ``plot_path`` (module rules)."""
    with contextlib.suppress(FileNotFoundError):
        plot_path.unlink()
    path = os.pathsep.join(p for p in sys.path if p)
    env = {**os.environ, "PYTHONPATH": path}
    return subprocess.Popen(
        [sys.executable, "-m", "aitune_fp.cli.plot_later", str(record_path), str(plot_path)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env=env,
        close_fds=True,
    )


def main(argv: list[str]) -> int:
    """Draw the record at ``argv[0]`` into ``argv[1]``; 0 when drawn, else 1."""
    from aitune_fp.cli.plot import plot_run

    try:
        plot_run(loads(Path(argv[0]).read_text(encoding="utf-8")), argv[1])
    except (ValueError, ImportError, OSError, IndexError):
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main(sys.argv[1:]))
