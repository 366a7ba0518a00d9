"""The cores busy over a window, from two readings of /proc/stat."""

from __future__ import annotations

from pathlib import Path

import pytest

from aitune_fp.effects.machine import busy_cores as module


def test_busy_cores_is_the_busy_share_of_the_ticks_times_the_cores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between readings 300 of 400 ticks were busy on 2 cores: 1.5 cores busy; iowait
    counts as idle; an unreadable file is None."""
    stat = tmp_path / "stat"
    readings = iter([
        "cpu 100 0 100 700 100 0 0 0 0 0\ncpu0 1\ncpu1 1\n",
        "cpu 250 0 250 750 150 0 0 0 0 0\ncpu0 1\ncpu1 1\n",
    ])  # fmt: skip
    original = module._sample

    def sample(path: Path) -> tuple[int, int, int]:
        path.write_text(next(readings))
        return original(path)

    monkeypatch.setattr(module, "_sample", sample)
    assert module.busy_cores(0.0, stat) == 1.5
    monkeypatch.setattr(module, "_sample", original)
    assert module.busy_cores(0.0, tmp_path / "missing") is None
