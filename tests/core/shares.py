"""How often a generator makes the case a law is about: a seeded draw of examples, counted.

A law that holds vacuously (its premise never met) passes for any implementation; a share
check run next to it fails when the generator stops making the case common.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from hypothesis import Phase, given, seed, settings
from hypothesis import strategies as st

T = TypeVar("T")


def share(strategy: st.SearchStrategy[T], case: Callable[[T], bool], n: int = 200) -> float:
    """The fraction of ``n`` seeded draws of ``strategy`` for which ``case`` holds."""
    hits: list[bool] = []

    @seed(20261204)
    @settings(max_examples=n, database=None, deadline=None, phases=[Phase.generate])
    @given(strategy)
    def draw(value: T) -> None:
        hits.append(case(value))

    draw()
    return sum(hits) / max(1, len(hits))
