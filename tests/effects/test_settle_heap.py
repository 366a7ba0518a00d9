"""A worker's full garbage collection falls before the clock starts (issue 32 §4): in a
heap frozen as the fork server freezes it, what a build leaves makes the next full pass
due soon; :func:`settle_heap` at the start of the profile stage takes it there."""

from __future__ import annotations

import gc
from collections.abc import Callable

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


def test_without_settling_a_full_pass_falls_in_the_timed_calls() -> None:
    """The mechanism is real in this Python: with nothing done before timing, a full
    collection runs among the timed allocations."""
    assert _full_passes_while_timing(lambda: None) >= 1


def test_settle_heap_moves_the_full_pass_before_the_clock() -> None:
    """After :func:`settle_heap`, the same timed allocations run no full collection."""
    assert _full_passes_while_timing(settle_heap) == 0
