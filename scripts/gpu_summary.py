"""The summary of a scripts/gpu-check.sh run: a table of every step and item, and the exit
code (no torch needed, so it also reports a run whose Python cannot import torch).

    python scripts/gpu_summary.py OUT_DIR   # prints the table, writes it to summary.txt
    python scripts/gpu_summary.py OUT_DIR --partial STEP   # after each step: one line of
                                                          # counts; summary.txt so far

``OUT_DIR/results.tsv`` holds one ``status, step, seconds, detail`` row per step (tab
separated); the item lines (``STATUS name: detail``) of the steps that have them are read
from ``OUT_DIR/<step>.log`` and listed, indented, under their step. Exit 0 only when no
row is a FAIL; a SKIP is listed and counted apart, never as a PASS.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

STATUSES = ("PASS", "FAIL", "SKIP")
ITEM_STEPS = ("providers", "backends", "memory", "overhead", "gpu-tests")


def summarize(rows: Sequence[Sequence[str]]) -> tuple[str, int]:
    """The summary table of ``(status, name, seconds, detail)`` rows and the exit code:
    0 only when nothing failed; SKIP rows are listed and counted apart, never as PASS.

    >>> text, code = summarize([("PASS", "cuda", "1", "H200"), ("SKIP", "providers", "2",
    ...                          "CPU onnxruntime"), ("PASS", "backends", "90", "")])
    >>> code, text.splitlines()[-1]
    (0, 'verdict: PASS where it could run (2 passed, 0 failed, 1 skipped; a SKIP is not a PASS)')
    >>> summarize([("PASS", "cuda", "1", ""), ("FAIL", "demo", "9", "exit 1")])[1]
    1
    """
    counts = {s: sum(1 for r in rows if r[0] == s) for s in STATUSES}
    width = max([len(r[1]) for r in rows] + [4])
    lines = [f"{'status':6}  {'step':{width}}  {'s':>4}  detail"]
    lines += [f"{r[0]:6}  {r[1]:{width}}  {r[2]:>4}  {r[3]}" for r in rows]
    if counts["FAIL"]:
        verdict = "FAIL"
    elif not counts["PASS"]:
        verdict = "NOTHING RAN"
    else:
        verdict = "PASS where it could run" if counts["SKIP"] else "PASS"
    lines.append(
        f"verdict: {verdict} ({counts['PASS']} passed, {counts['FAIL']} failed, "
        f"{counts['SKIP']} skipped; a SKIP is not a PASS)"
    )
    return "\n".join(lines), 1 if counts["FAIL"] else 0


def read_rows(out: Path) -> list[list[str]]:
    """The step rows of ``out/results.tsv`` with each step's item lines (indented) below."""
    rows: list[list[str]] = []
    for line in (out / "results.tsv").read_text().splitlines():
        status, name, seconds, detail = [*line.split("\t"), "", "", ""][:4]
        rows.append([status, name, seconds, detail])
        log = out / f"{name}.log"
        if name in ITEM_STEPS and log.exists():
            for item in log.read_text(errors="replace").splitlines():
                head, _, rest = item.partition(" ")
                if head in STATUSES:
                    label, _, detail = rest.partition(": ")
                    rows.append([head, f"  {label}", "", detail[:300]])
    return rows


def summary(out_dir: str, after: str | None = None) -> int:
    """Print and write ``summary.txt``'s table for the run in ``out_dir``; its exit code.

    With ``after`` (the step just ended) the run is still going: ``summary.txt`` holds the
    table so far, its last line ``so far`` instead of ``verdict`` (only a finished run has
    a verdict), and only that line is printed.
    """
    out = Path(out_dir)
    text, code = summarize(read_rows(out))
    if after is not None:
        lines = text.splitlines()
        counts = lines[-1].split("(", 1)[1].split(";")[0]
        lines[-1] = f"so far, after {after}: {counts}"
        text = "\n".join(lines)
        print(lines[-1])
    else:
        print(text)
    (out / "summary.txt").write_text(text + "\n")
    return code


if __name__ == "__main__":
    if len(sys.argv) not in (2, 4) or (len(sys.argv) == 4 and sys.argv[2] != "--partial"):
        print("usage: gpu_summary.py OUT_DIR [--partial STEP]", file=sys.stderr)
        sys.exit(2)
    sys.exit(summary(sys.argv[1], sys.argv[3] if len(sys.argv) == 4 else None))
