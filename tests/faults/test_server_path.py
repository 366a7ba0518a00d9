"""The workers' fork server imports from the tune process's path, not its working directory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = """
import sys
sys.path.insert(0, {ours!r})
from aitune_fp.effects.isolation import client
import shadow_target

ctx = client.context(["shadow_value"])  # the server preloads it
with client._main_hidden():
    proc = ctx.Process(target=shadow_target.report, args=({out!r},))
    proc.start()
proc.join(60)
"""


def _package(folder: Path, value: str) -> None:
    folder.mkdir()
    (folder / "shadow_value.py").write_text(f"VALUE = {value!r}\n")
    (folder / "shadow_target.py").write_text(
        "def report(path):\n"
        "    import shadow_value\n"
        "    open(path, 'w').write(shadow_value.VALUE)\n"
    )


def test_a_worker_imports_what_the_tune_process_imports_not_the_working_directorys(
    tmp_path: Path,
) -> None:
    """A preloaded module shadowed in the working directory is the tune process's in a worker."""
    ours, elsewhere = tmp_path / "ours", tmp_path / "cwd"
    _package(ours, "ours")
    _package(elsewhere, "working directory")
    out = tmp_path / "seen.txt"
    code = SCRIPT.format(ours=str(ours), out=str(out))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=elsewhere, env=env, capture_output=True, text=True,
        timeout=240, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert out.read_text() == "ours"
