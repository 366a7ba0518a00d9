"""``aitune-fp``: the command line (also ``python -m aitune_fp``).

Commands: ``demo``, ``tune``, ``report``, ``reselect``, ``replay``, ``fleet``, ``serve``,
``export``, ``service``, ``check``
(``aitune-fp COMMAND --help``).

Rules:
- exit codes: 0 when the command did its job (for ``demo``, ``tune`` and ``reselect``: a
  backend was selected), 1 with one line ``aitune-fp: error: …`` when it could not, 2 for a
  usage error (argparse's message, and an ``--out`` or ``--cache-dir`` that is not a
  folder or cannot be written, found before any work), 130 when interrupted (Ctrl-C) and
  143 when terminated (SIGTERM), after saying where the partial run record is;
- the user never sees a traceback unless they ask for one with ``--debug`` (which also
  prints the library's log lines): an unexpected exception is one line naming its type;
- off a terminal (pipes, logs) output is plain text 160 columns wide unless ``$COLUMNS``
  says otherwise;
- commands that only read a stored run (``report``, ``reselect``, ``replay``) never
  import torch.
- a ``tune`` or ``demo`` started from the shell attaches to this user's tuning service
  when one is running (:mod:`aitune_fp.cli.service_client`; ``--no-service`` or
  ``AITUNE_FP_SERVICE=0`` opt out): the service forks a fresh process that runs
  :func:`run_forked` with this command line; without one, the command starts one in the
  background for the commands after it and runs here without waiting.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from aitune_fp.cli.parser import (
    PROG,
    build_parser,
)
from aitune_fp.cli.precision_options import check_reselect

PIPE_WIDTH = 160
Command = Callable[[argparse.Namespace, Any, Any], int]


def _command(name: str) -> Command:
    """The function running command ``name`` (imported on demand)."""
    if name in ("demo", "tune", "load", "tune-generate"):
        from aitune_fp.cli import tune_commands as module
    elif name == "fleet":
        from aitune_fp.cli import fleet_commands as module  # type: ignore[no-redef]
    elif name == "service":
        from aitune_fp.cli import service_commands as module  # type: ignore[no-redef]
    elif name in ("serve", "export"):
        from aitune_fp.cli import serve_commands as module  # type: ignore[no-redef]
    elif name == "check":
        from aitune_fp.cli import check_commands as module  # type: ignore[no-redef]
    else:
        from aitune_fp.cli import record_commands as module  # type: ignore[no-redef]
    return getattr(module, name.replace("-", "_"))  # type: ignore[no-any-return]


def _check_backends(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """A usage error for a backend name the registry does not know, or for an empty list."""
    if getattr(args, "backends", None) == ():
        parser.error("argument --backends: no backend named; give at least one, e.g. onnxruntime")
    if not getattr(args, "backends", None):
        return
    from aitune_fp.effects.backends.registry import backend_by_name

    for name in args.backends:
        try:
            backend_by_name(name)
        except (KeyError, ValueError) as error:
            message = error.args[0] if error.args else str(error)
            parser.error(f"argument --backends: {message}")


def _check_locations(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """A usage error for an ``--out`` or ``--cache-dir`` that cannot hold our files."""
    from aitune_fp.cli.outputs import folder_problem

    if args.command not in ("demo", "tune"):
        return
    problem = folder_problem(args.out, "--out")
    cache = Path(args.cache_dir) if args.cache_dir is not None else None
    if problem is None and cache is not None and cache.exists() and not cache.is_dir():
        problem = f"--cache-dir {cache} exists and is not a folder"
    if problem is not None:
        parser.error(problem)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread so that the run ends as cleanly as on Ctrl-C."""


def _on_sigterm(signum: int, frame: Any) -> None:
    raise Terminated()


def _consoles(console: Any) -> tuple[Any, Any]:
    """stdout and stderr consoles; off a terminal, tables get 160 columns unless $COLUMNS."""
    width = None if "COLUMNS" in os.environ else PIPE_WIDTH
    out, err = console(), console(stderr=True)
    if not out.is_terminal:
        out = console(width=width)
    if not err.is_terminal:
        err = console(stderr=True, width=width)
    return out, err


def _logging(*, debug: bool) -> None:
    """Library log lines go to stderr with ``--debug``; otherwise the progress view says it."""
    logger = logging.getLogger("aitune_fp")
    if debug:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
    elif not logger.handlers:
        logger.addHandler(logging.NullHandler())


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code. A ``tune`` or ``demo`` started from
    the shell runs in this user's tuning service when one is running (docs/service.md)."""
    if argv is None:
        from aitune_fp.cli.service_client import attach

        try:
            code = attach(sys.argv[1:])
        except KeyboardInterrupt:  # before the service said which tune to forward it to
            return _said("interrupted", 130)
        if code is not None:
            return code
    return _main(argv, fresh=argv is None)


def run_here() -> int:
    """Run ``sys.argv``'s command in this process, which was started for it (the console
    script after its attach found no service, :mod:`aitune_fp.cli.entry`)."""
    return _main(None, fresh=True)


def run_forked(argv: list[str], started: float | None) -> int:
    """Run the command line in a tune the service forked for a client that started at
    ``started`` (``CLOCK_BOOTTIME`` seconds): as a fresh process would, counting from then."""
    return _main(argv, fresh=True, started=started)


def _main(argv: Sequence[str] | None, *, fresh: bool, started: float | None = None) -> int:
    """Parse and run; ``fresh``: this process was started for this command."""
    console = _rich_console()
    if console is None:
        return 1
    parser = build_parser()
    args = parser.parse_args(argv)
    if fresh:
        _started_for(args, started)
    _logging(debug=args.debug)
    out, err = _consoles(console)
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        return _run(parser, args, out, err)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _rich_console() -> Any:
    """rich's ``Console`` class, or ``None`` (and why, on stderr) when rich is missing."""
    try:
        from rich.console import Console
    except ImportError:
        print(f"{PROG}: error: the CLI needs rich: pip install 'aitune_fp[cli]'", file=sys.stderr)
        return None
    return Console


def _started_for(args: argparse.Namespace, started: float | None) -> None:
    """A process started for this command: its wall counts from its start (or the
    client's, ``started``), and the workers' server imports while this process does (its
    own, and matplotlib's)."""
    from aitune_fp.cli.head_start import head_start
    from aitune_fp.cli.plot_import import import_for_plot
    from aitune_fp.shell.wall_clock import count_from_process_start

    count_from_process_start(started)
    head_start(args)
    import_for_plot(args)


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace, out: Any, err: Any) -> int:
    """Check the arguments and run the command; its errors become exit codes (module rules)."""
    from aitune_fp.cli.outputs import CliError

    try:
        _check(parser, args)
        return _command(args.command)(args, out, err)
    except CliError as error:
        return _said(f"error: {error}", 1)
    except Terminated:
        return _said("terminated (SIGTERM)", 143)
    except KeyboardInterrupt:
        return _said("interrupted", 130)
    except Exception as error:
        if args.debug:
            raise
        return _said(_unexpected(error), 1)


def _check(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """The checks argparse cannot make: the backends, the locations, ``reselect``'s options
    (a failed one is a usage error, exit 2)."""
    _check_backends(parser, args)
    _check_locations(parser, args)
    check_reselect(parser, args)


def _unexpected(error: Exception) -> str:
    """The one line an unexpected error is: its type and its message's first line."""
    first = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"error: unexpected {type(error).__name__}: {first} (rerun with --debug)"


def _said(line: str, code: int) -> int:
    """Print ``aitune-fp: line`` on stderr; return ``code``."""
    print(f"{PROG}: {line}", file=sys.stderr)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
