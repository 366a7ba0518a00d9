"""``serve`` and ``export``: a saved tuned model behind HTTP, or as a Triton model repository.

Rules:
- ``aitune-fp serve DIR`` deploys the save on Ray Serve (local Ray unless ``--address``),
  prints the URL, the batching and the tune's decision, and serves until Ctrl-C or SIGTERM
  (or ``--duration`` seconds), then stops what it started; without ``ray[serve]`` it exits
  1 with one line naming the ``serve`` extra;
- ``aitune-fp serve FILE --module FACTORY`` with a saved ``TunedGenerator`` serves
  ``POST /generate`` instead (:mod:`aitune_fp.cli.serve_generate`);
- ``aitune-fp export DIR --triton REPO`` writes ``REPO/<name>/config.pbtxt`` and the
  artifact, checked with Triton's schema; without ``tritonclient`` it exits 1 with one line
  naming the ``triton`` extra; a save Triton cannot run is one line saying why.
"""

from __future__ import annotations

import argparse
from typing import Any

from aitune_fp.cli.options import device_arg, factory_arg, positive_arg, seconds_arg
from aitune_fp.cli.outputs import CliError
from aitune_fp.cli.serve_generate import (
    add_generator_options,
    own_signals,
    serve_generator,
    serve_until_done,
)


def _batching_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--max-batch-size",
        type=positive_arg,
        default=None,
        metavar="N",
        help="largest batch in rows (default: from the tune, see docs/serving.md)",
    )
    parser.add_argument(
        "--batch-wait-ms",
        type=float,
        default=None,
        metavar="MS",
        help="how long a batch waits to fill (default: from the tune's latency)",
    )
    parser.add_argument("--device", type=device_arg, default=None, help="default: as tuned")


def add_serve_parsers(sub: Any) -> None:
    """Add ``serve`` and ``export`` to the command line's subparsers."""
    serve = sub.add_parser("serve", help="serve a saved tuned model over HTTP (Ray Serve)")
    serve.add_argument("saved", metavar="DIR", help="a folder written by --save")
    _cluster_options(serve)
    _model_options(serve)
    _batching_options(serve)
    add_generator_options(serve)
    _add_export(sub)


def _add_export(sub: Any) -> None:
    """``export``: the save as a Triton model repository."""
    export = sub.add_parser("export", help="export a saved tuned model (Triton repository)")
    export.add_argument("saved", metavar="DIR", help="a folder written by --save")
    export.add_argument(
        "--triton", required=True, metavar="REPO", help="the Triton model repository to write"
    )
    export.add_argument("--name", default=None, help="model name (default: the folder's name)")
    export.add_argument("--instances", type=positive_arg, default=1, help="instance count")
    export.add_argument("--force", action="store_true", help="replace an existing model folder")
    _batching_options(export)


def _cluster_options(serve: argparse.ArgumentParser) -> None:
    """Where ``serve`` runs: the Ray cluster, the HTTP address, the replicas and CPUs."""
    serve.add_argument(
        "--address", default=None, metavar="A", help="Ray cluster address (default: start one)"
    )
    serve.add_argument("--host", default="127.0.0.1", help="HTTP host (default: 127.0.0.1)")
    serve.add_argument("--port", type=positive_arg, default=8000, help="HTTP port (default: 8000)")
    serve.add_argument("--replicas", type=positive_arg, default=1, help="default: 1")
    serve.add_argument(
        "--num-cpus", type=positive_arg, default=None, help="CPUs of a local Ray (default: all)"
    )


def _model_options(serve: argparse.ArgumentParser) -> None:
    """What ``serve`` loads and for how long: the source module, the pinned digest, the
    duration."""
    serve.add_argument(
        "--module",
        type=factory_arg,
        default=None,
        metavar="FACTORY",
        help="the module it was tuned from (path/to/file.py:factory): needed for a recipe, "
        "and runs requests outside the tuned envelope instead of refusing them",
    )
    serve.add_argument(
        "--expected-digest", default=None, metavar="sha256:HEX", help="pin the manifest"
    )
    serve.add_argument(
        "--duration", type=seconds_arg, default=None, metavar="S", help="stop after S seconds"
    )


def serve(args: argparse.Namespace, out: Any, err: Any) -> int:
    """Serve the saved model until interrupted (or ``--duration`` ends)."""
    from aitune_fp.shell.generation.tuned_generator import is_generator_save

    module = _source_module(args)
    if is_generator_save(args.saved):
        return serve_generator(args, out, module)
    serving = _started(args, module)
    plan = serving.saved.plan
    lines = (
        f"serving {args.saved}: {plan.backend} at {serving.url}/predict "
        f"(GET /health, GET /info); Ctrl-C stops",
        f"batching: {plan.rule}",
        *serving.saved.decision,
    )
    return serve_until_done(serving, lines, out, args.duration)


def _source_module(args: argparse.Namespace) -> Any:
    """The module ``--module`` builds (``None`` without it); a failing factory is a
    :class:`CliError`."""
    if args.module is None:
        return None
    from aitune_fp.cli.factory import FactoryError, call_factory

    try:
        return call_factory(args.module)[0]
    except FactoryError as error:
        raise CliError(str(error)) from None


def _started(args: argparse.Namespace, module: Any) -> Any:
    """The deployment started under the command's own signal handlers; a save that cannot
    be served is a :class:`CliError`."""
    from aitune_fp.shell.sealed import LoadError
    from aitune_fp.shell.serving.api import serve as start_serving
    from aitune_fp.shell.serving.ray_serve import ServeError

    try:
        with own_signals():
            return start_serving(
                args.saved,
                module,
                address=args.address,
                host=args.host,
                port=args.port,
                replicas=args.replicas,
                device=args.device,
                max_batch_size=args.max_batch_size,
                batch_wait_ms=args.batch_wait_ms,
                expected_digest=args.expected_digest,
                num_cpus=args.num_cpus,
            )
    except (LoadError, ServeError, ValueError) as error:
        raise CliError(str(error)) from None


def export(args: argparse.Namespace, out: Any, err: Any) -> int:
    """Write the Triton model repository for the saved model."""
    from aitune_fp.core.serving.triton import NotExportable
    from aitune_fp.shell.sealed import LoadError
    from aitune_fp.shell.serving.triton_export import ExportError, export_triton

    try:
        target = export_triton(
            args.saved,
            args.triton,
            name=args.name,
            device=args.device,
            instances=args.instances,
            max_batch_size=args.max_batch_size,
            batch_wait_ms=args.batch_wait_ms,
            force=args.force,
        )
    except (LoadError, ExportError, NotExportable) as error:
        raise CliError(str(error)) from None
    config = (target / "config.pbtxt").read_text(encoding="utf-8")
    out.print(f"wrote {target} (config.pbtxt, model files)", markup=False, highlight=False)
    out.print(config.splitlines()[0].lstrip("# "), markup=False, highlight=False)
    return 0
