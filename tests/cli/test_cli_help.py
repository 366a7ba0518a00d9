"""Every CLI verb's ``--help`` prints its usage (argparse formats help strings with ``%``)."""

from __future__ import annotations

import argparse
import contextlib
import io

import pytest

from aitune_fp.cli.parser import build_parser


def _verbs() -> list[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sorted(sub.choices)


@pytest.mark.parametrize("verb", _verbs())
def test_every_verbs_help_prints_its_usage(verb: str) -> None:
    """``aitune-fp VERB --help`` exits 0 with a usage line, for every verb."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as ended:
        build_parser().parse_args([verb, "--help"])
    assert ended.value.code == 0
    assert out.getvalue().startswith("usage:")
