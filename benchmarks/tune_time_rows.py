"""The racing and decision-cache rows of :mod:`tune_time`: more runs of one model, each in
a fresh process, and their walls side by side with the cold and warm ones.

Rows (each a fresh ``python`` process; ``cold`` and ``warm`` are :mod:`tune_time`'s):
- ``warm fresh``: the cached artifacts, but ``fresh=True`` (a full tune, racing as the
  cold one did): what a warm re-tune costs without the decision cache;
- ``hit``: the third unchanged tune: the decision cache's hit (the record's ``decision``
  line says so), the pick re-verified against its runner-up only;
- ``no race cold`` and ``no race fresh``: the same two tunes with
  ``AITUNE_FP_RACE=0`` in a cache folder of their own (every candidate sweeps the whole
  ladder, as before the race).

Every row prints its wall and its record's ``decision`` line; the whole-run stage
breakdown of each is printed by :func:`tune_time._print_accounts`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

Runner = Callable[..., Any]


def more_runs(name: str, cache: Path, source: Path | None, run: Runner) -> list[tuple[str, Any]]:
    """The extra rows for ``name`` (``cache``: the folder the cold and warm runs used;
    ``run(name, cache, source, fresh=...)``: one fresh process's timings)."""
    rows = [("warm fresh", run(name, cache, source, fresh=True))]
    rows.append(("hit", run(name, cache, source, fresh=False)))
    other = cache.parent / f"{cache.name}-no-race"
    with mock.patch.dict(os.environ, {"AITUNE_FP_RACE": "0"}):  # the children inherit it
        rows.append(("no race cold", run(name, other, source, fresh=False)))
        rows.append(("no race fresh", run(name, other, source, fresh=True)))
    return rows


def print_rows(name: str, rows: list[tuple[str, Any]]) -> None:
    """One line per row: its wall and its record's decision line."""
    print(f"\n{name}: every run (s, fresh processes)")
    for label, timings in rows:
        decision = timings[3] if len(timings) > 3 else "—"
        print(f"  {label:<22}{timings[0]:8.1f} s  {decision}")
