"""``python -m aitune_fp``: the same command line as ``aitune-fp``."""

from __future__ import annotations

import sys

from aitune_fp.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
