"""matplotlib imported while the workers' fork server imports, not after the tune.

Rules:
- ``tune`` and ``demo`` draw ``plot.png`` at the end of each run (unless ``--no-plot``);
  importing matplotlib for it took 1.0–2.4 s here, on the wall after everything else;
- :func:`import_for_plot` imports it at the command's start instead, right after the fork
  server was asked to start: in an isolated run this process then only waits for that
  server's imports (:mod:`aitune_fp.effects.isolation.ready`), so the import costs no wall
  there, and it is done before anything is timed; a run in process (``--no-isolation``)
  pays it at the start instead of the end, the same total;
- nothing here raises: without matplotlib the plot is skipped later with its warning.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib

from aitune_fp.cli.head_start import COMMANDS  # the commands that tune (stdlib only)


def import_for_plot(args: argparse.Namespace) -> None:
    """Import matplotlib's Agg canvas now when this command will draw a plot."""
    if getattr(args, "command", None) not in COMMANDS or getattr(args, "no_plot", False):
        return
    with contextlib.suppress(Exception):
        importlib.import_module("matplotlib.backends.backend_agg")
        importlib.import_module("matplotlib.figure")
