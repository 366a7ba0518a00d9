"""``python -m aitune_fp``: the same command line as ``aitune-fp``."""

from __future__ import annotations

from aitune_fp.cli.entry import run

if __name__ == "__main__":
    run()
