"""The progress view: plain lines off a terminal, a live display on one."""

from __future__ import annotations

import io

from rich.console import Console

from aitune_fp.cli.console import ProgressView
from aitune_fp.shell.progress import ProgressEvent

EVENTS = [
    ProgressEvent("plan", total=2, message="Max throughput: onnxruntime"),
    ProgressEvent("backend_start", "eager", total=2),
    ProgressEvent("stage", "eager", stage="build", total=2),
    ProgressEvent("batch_size", "eager", stage="profile", batch_size=4, total=2, message="1 ms"),
    ProgressEvent("backend_done", "eager", done=1, total=2, message="ok: 4000.00 samples/s"),
    ProgressEvent("backend_done", "onnxruntime", done=2, total=2, message="failed: boom"),
    ProgressEvent("selected", "eager", done=2, total=2, message="Selected eager"),
]


def _show(console: Console) -> None:
    with ProgressView(console, "mlp") as view:
        for event in EVENTS:
            view(event)


def test_off_a_terminal_each_backend_result_is_one_plain_line() -> None:
    """Piped output gets the plan and one line per finished backend, nothing else."""
    buf = io.StringIO()
    _show(Console(file=buf, width=120))
    assert buf.getvalue().splitlines() == [
        "mlp: Max throughput: onnxruntime",
        "  eager · ok: 4000.00 samples/s",
        "  onnxruntime · failed: boom",
    ]


def test_on_a_terminal_the_live_display_keeps_the_results() -> None:
    """The live display prints each finished backend above the bars and cleans up."""
    buf = io.StringIO()
    _show(Console(file=buf, force_terminal=True, width=120))
    text = buf.getvalue()
    assert "eager · ok: 4000.00 samples/s" in text and "onnxruntime · failed: boom" in text


def test_a_stored_run_shows_what_its_plan_left_out() -> None:
    """``show_run`` (the tune's summary and ``aitune-fp report``) prints the plan's line of
    what was left out as not native on the machine."""
    from aitune_fp.cli.console import show_run
    from aitune_fp.core.accuracy.reach import Capabilities, reach
    from aitune_fp.core.record.run_record import RunRecord

    left = reach([("openvino(precision='bfloat16')", "bfloat16")], Capabilities("cpu", frozenset()))
    record = RunRecord("m", "cpu", {}, None, (), None, None, {}, {}, None, left_out=left.left_out)
    buf = io.StringIO()
    show_run(Console(file=buf, width=200), record)
    assert "left out (not native here): openvino(precision='bfloat16')" in buf.getvalue()
