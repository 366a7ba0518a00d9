"""The options of how ``demo`` and ``tune`` run their backends: the worker processes, the
service, and the deadlines of a build and of a call.

Rule: the default deadlines are the tuner's own
(:mod:`aitune_fp.effects.isolation.protocol`, not imported here: building the parser imports
no torch).
"""

from __future__ import annotations

import argparse

from aitune_fp.cli.options import seconds_arg

DEFAULT_BUILD_TIMEOUT = 600.0  # aitune_fp.effects.isolation.protocol (not imported: no torch)
DEFAULT_CALL_TIMEOUT = 60.0


def add_isolation_options(parser: argparse.ArgumentParser) -> None:
    """Deadlines of builds and calls, and the worker processes."""
    _deadline_options(parser)
    parser.add_argument(
        "--no-isolation",
        action="store_true",
        help="build and profile every backend in this process (for debugging: a crash or "
        "hang then ends the whole run)",
    )
    parser.add_argument(
        "--no-service",
        action="store_true",
        help="run here even when a tuning service is running (docs/service.md)",
    )


def _deadline_options(parser: argparse.ArgumentParser) -> None:
    """How long a build and a call may take."""
    parser.add_argument(
        "--build-timeout",
        type=seconds_arg,
        default=DEFAULT_BUILD_TIMEOUT,
        metavar="SECONDS",
        help=f"a build, export or compile running longer fails that backend "
        f"(default: {DEFAULT_BUILD_TIMEOUT:g})",
    )
    parser.add_argument(
        "--call-timeout",
        type=seconds_arg,
        default=DEFAULT_CALL_TIMEOUT,
        metavar="SECONDS",
        help=f"one call that does not return in time fails that backend "
        f"(default: {DEFAULT_CALL_TIMEOUT:g})",
    )
