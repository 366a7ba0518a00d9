"""``report``, ``reselect`` and ``replay``: commands on a stored run, no model, no device.

Rules:
- ``report`` prints the run's table and decision, or its Markdown (``--markdown``), and can
  draw its plot (``--plot FILE.png``); ``--stats`` adds the noise report (the decision's
  speedup interval and one statistics line per backend) for a run whose stored strategy
  is a shipped one, rebuilt from the record;
- ``reselect`` re-runs the pure fold on the stored profiles with another strategy, prints
  the new table and decision, and can store the re-selected run (``--out NEW.json``);
- ``replay`` re-derives the run's decisions from its event log
  (:mod:`aitune_fp.core.session.recorded`): what it selects and, under ``--strategy``,
  the first decision where that strategy would have gone another way;
- ``report`` exits 0 once it has shown the run, whatever the run decided; ``reselect``
  exits 0 when the new strategy selects a backend, else 1 with the reason; ``replay``
  exits 0 when it replayed (1: the record keeps no log).
"""

from __future__ import annotations

import argparse

from rich.console import Console

from aitune_fp.cli.console import show_run
from aitune_fp.cli.outputs import CliError, read_record, write_plot, write_record
from aitune_fp.cli.precision_options import bounded
from aitune_fp.core.record.run_record import RunRecord, with_strategy
from aitune_fp.core.report.markdown import render_markdown
from aitune_fp.core.report.notes import note_lines
from aitune_fp.core.report.stats import noise_report
from aitune_fp.core.session.recorded import replay_lines, replay_record
from aitune_fp.core.strategies.registry import strategy_from_config


def report(args: argparse.Namespace, out: Console, err: Console) -> int:
    """Show a stored run (table, or Markdown) and optionally plot it."""
    record = read_record(args.run)
    if args.markdown:
        out.print(render_markdown(record), markup=False, highlight=False, end="", soft_wrap=True)
    else:
        show_run(out, record)
        for line in ("Notes:", *note_lines(record.notes)) if record.notes else ():
            out.print(line, markup=False, highlight=False, soft_wrap=True)
    if args.stats:
        for line in _noise_lines(record):
            out.print(line, markup=False, highlight=False)
    if args.plot is not None:
        drawn = write_plot(record, args.plot, err)
        if drawn is None:
            raise CliError("no plot was drawn: install matplotlib (pip install 'aitune_fp[cli]')")
        err.print(f"plot written to {drawn}", markup=False, highlight=False)
    return 0


def _noise_lines(record: RunRecord) -> tuple[str, ...]:
    """The noise report of a stored run, its strategy rebuilt from the stored config."""
    if record.selection is None:
        reason = f" ({record.error.message})" if record.error else ""
        return (f"no statistics: nothing was selected{reason}",)
    try:
        strategy = strategy_from_config(record.strategy)
    except ValueError as error:
        raise CliError(f"--stats needs a shipped strategy: {error}") from None
    return noise_report(strategy, record.selection)


def reselect(args: argparse.Namespace, out: Console, err: Console) -> int:
    """Re-select a stored run with ``--strategy`` and show (and optionally store) it."""
    stored = read_record(args.run)
    try:
        strategy = args.strategy or strategy_from_config(stored.strategy)
    except ValueError as error:
        raise CliError(f"the stored strategy cannot be rebuilt ({error})") from None
    record = with_strategy(stored, bounded(strategy, args))
    show_run(out, record)
    if args.out is not None:
        err.print(f"re-selected run written to {write_record(record, args.out)}", markup=False)
    if record.selection is None:
        raise CliError(record.error.message if record.error else "no backend was selected")
    return 0


def replay(args: argparse.Namespace, out: Console, err: Console) -> int:
    """Replay a stored run from its event log (under ``--strategy`` when given)."""
    record = read_record(args.run)
    try:
        replayed = replay_record(record, args.strategy)
    except ValueError as error:
        raise CliError(f"{args.run} cannot be replayed: {error}") from None
    spec = args.strategy.name if args.strategy is not None else None
    for line in replay_lines(record, replayed, spec):
        out.print(line, markup=False, highlight=False)
    return 0
