"""``aitune-fp serve FILE --module FACTORY``: a saved generator behind ``POST /generate``.

Rules: ``FILE`` is a ``TunedGenerator`` save (``tune-generate --save``); ``--module`` names
the model it was tuned from (required: the pick is a recipe); ``--tokenizer`` (a
``file.py:factory`` returning a tokenizer, or a local tokenizer folder) lets requests send
text. It prints the URL, the routes and the tune's pick and reason, then serves until Ctrl-C,
SIGTERM or ``--duration`` seconds, and stops what it started.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from aitune_fp.cli.outputs import CliError


def load_tokenizer(target: str) -> Any:
    """The tokenizer a ``file.py:factory`` returns, or the one saved in a local folder."""
    from aitune_fp.cli.factory import FactoryError, call_target

    if Path(target).is_dir():
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(target, local_files_only=True)
    try:
        return call_target(target)
    except FactoryError as error:
        raise CliError(str(error)) from None


def own_signals() -> AbstractContextManager[None]:
    """Keep our SIGTERM/SIGINT handlers across the block: Ray installs its own SIGTERM
    handler, which aborts the process; ours stop cleanly
    (:func:`~aitune_fp.shell.serving.ray_serve.handlers_kept`, which ``ray.init`` is
    wrapped in too)."""
    from aitune_fp.shell.serving.ray_serve import handlers_kept

    return handlers_kept()


def serve_until_done(serving: Any, lines: Iterable[str], out: Any, duration: float | None) -> int:
    """Print ``lines``, serve until ``duration`` seconds passed (forever when ``None``) or
    an interrupt, then stop what was started; exit code 0."""
    for line in lines:
        out.print(line, markup=False, highlight=False)
    try:
        deadline = None if duration is None else time.monotonic() + duration
        while deadline is None or time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        serving.stop()
    return 0


def add_generator_options(serve: argparse.ArgumentParser) -> None:
    """The ``serve`` options only a saved generator uses."""
    serve.add_argument(
        "--tokenizer",
        default=None,
        metavar="FACTORY|DIR",
        help="a saved generator's tokenizer (file.py:factory or a folder): /generate takes text",
    )


def _lines(args: argparse.Namespace, serving: Any) -> tuple[str, ...]:
    record = serving.saved
    return (
        f"serving {args.saved}: {record['pick']} at {serving.url}/generate "
        "(GET /health, GET /info); Ctrl-C stops",
        f"prefill {record['prefill']}, decode {record['decode']}: {record['reason']}",
    )


def serve_generator(args: argparse.Namespace, out: Any, module: Any) -> int:
    """Serve the saved generator (see the module rules)."""
    from aitune_fp.shell.serving.generate_app import serve_generator as start
    from aitune_fp.shell.serving.ray_serve import ServeError, ServeOptions

    if module is None:
        raise CliError("a saved generator is a recipe: pass --module path/to/file.py:factory")
    tokenizer = None if args.tokenizer is None else load_tokenizer(args.tokenizer)
    where = (args.address, args.host, args.port, args.replicas)
    options = ServeOptions(*where, num_cpus=args.num_cpus)
    try:
        with own_signals():
            serving = start(args.saved, module, tokenizer, options)
    except (ServeError, ValueError) as error:
        raise CliError(str(error)) from None
    return serve_until_done(serving, _lines(args, serving), out, args.duration)
