"""A worker's full garbage collection falls before the clock starts (issue 32 §4): in a
heap frozen as the fork server freezes it, what a build leaves makes the next full pass
due soon; :func:`settle_heap` at the start of the profile stage takes it there.

Each case runs in a fresh interpreter (``python -m tests.effects.test_settle_heap``), as a
worker's heap is its own: in the test session, whatever earlier tests imported after the
session froze its heap (NNCF, for one) raises the collector's long-lived count, and with
it how much must be allocated before a full pass is due."""

from __future__ import annotations

import gc
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from aitune_fp.effects.isolation.worker import settle_heap

BUILD, TIMED = 50_000, 60_000  # objects a build leaves; objects the timed calls keep


def _full_passes_while_timing(before_timing: Callable[[], None]) -> int:
    """Full collections during the "timed" allocations, after a frozen heap and a build."""
    gc.collect()
    gc.freeze()
    seen: list[int] = []

    def note(phase: str, info: dict[str, int]) -> None:
        if phase == "stop":
            seen.append(info["generation"])

    try:
        built = [[i] for i in range(BUILD)]
        before_timing()
        gc.callbacks.append(note)
        timed = [[i] for i in range(TIMED)]
        gc.callbacks.remove(note)
        del built, timed
    finally:
        gc.unfreeze()
        gc.collect()
    return seen.count(2)


ROOT = Path(__file__).resolve().parents[2]


def _in_a_fresh_interpreter(case: str) -> int:
    """:func:`_full_passes_while_timing` for ``case`` (``plain`` or ``settled``), counted in
    a fresh interpreter."""
    command = [sys.executable, "-m", "tests.effects.test_settle_heap", case]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True)
    return int(done.stdout.strip())


def test_without_settling_a_full_pass_falls_in_the_timed_calls() -> None:
    """The mechanism is real in this Python: with nothing done before timing, a full
    collection runs among the timed allocations."""
    assert _in_a_fresh_interpreter("plain") >= 1


def test_settle_heap_moves_the_full_pass_before_the_clock() -> None:
    """After :func:`settle_heap`, the same timed allocations run no full collection."""
    assert _in_a_fresh_interpreter("settled") == 0


if __name__ == "__main__":
    print(_full_passes_while_timing(settle_heap if sys.argv[1] == "settled" else lambda: None))
