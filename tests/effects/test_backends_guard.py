"""The build guard: errors become failure values, everything printed lands in build.log."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from returns.io import IOSuccess
from returns.unsafe import unsafe_perform_io

from aitune_fp.effects.backends._build_guard import BuildLog, first_line, guarded_build
from aitune_fp.effects.backends.base import Built


def test_failure_is_a_value_with_first_line_and_log(tmp_path: Path) -> None:
    """A raising build is a build-stage failure; build.log keeps the output and traceback."""

    def build(log: BuildLog) -> Built:
        print("exporter chatter")
        log.write("step one done")
        raise RuntimeError("cannot trace\nlong details")

    result = guarded_build("demo", tmp_path, build)
    failure = unsafe_perform_io(result.failure())
    assert (failure.backend, failure.stage) == ("demo", "build")
    assert failure.message == f"RuntimeError: cannot trace (full log: {tmp_path / 'build.log'})"
    text = (tmp_path / "build.log").read_text()
    for expected in ("== build of demo", "exporter chatter", "step one done", "long details"):
        assert expected in text
    assert "Traceback (most recent call last)" in text


def test_success_keeps_output_out_of_the_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A successful build's prints go to build.log, not to stdout or stderr."""

    def build(log: BuildLog) -> Built:
        print("to stdout")
        print("to stderr", file=sys.stderr)
        return Built(lambda: None)

    result = guarded_build("demo", tmp_path, build)
    assert isinstance(result, IOSuccess)
    out, err = capsys.readouterr()
    assert (out, err) == ("", "")
    text = (tmp_path / "build.log").read_text()
    assert "to stdout" in text and "to stderr" in text and "build succeeded" in text


def test_first_line_is_short() -> None:
    """The failure summary is one line of at most 400 characters."""
    text = first_line(ValueError("x" * 1000 + "\nsecond"))
    assert len(text) == 400 and "\n" not in text
