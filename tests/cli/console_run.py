"""The installed ``aitune-fp`` console script in a child process, with the time of each
output line and of its end: what the exit tests measure (not ``main()``, which never
takes the console script's way out)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parents[2]
CONSOLE = Path(sys.executable).with_name("aitune-fp")


@dataclass
class Console:
    """A running console script: its output lines as they come, each with its time."""

    process: subprocess.Popen[bytes]
    started: float = field(default_factory=time.monotonic)
    lines: list[tuple[float, str]] = field(default_factory=list)
    readers: list[threading.Thread] = field(default_factory=list)

    def last_output(self) -> float:
        """When the last line came (the start when none did)."""
        return max((t for t, _ in self.lines), default=self.started)

    def text(self) -> str:
        """Everything it printed so far, in arrival order."""
        return "\n".join(line for _, line in self.lines)

    def ended(self, within: float) -> tuple[int | None, float]:
        """Its exit code and end time, or ``None`` (and the process killed) when it did not
        end within ``within`` seconds."""
        try:
            code: int | None = self.process.wait(within)
        except subprocess.TimeoutExpired:
            code = None
            self.process.kill()
            self.process.wait(30)
        end = time.monotonic()
        for reader in self.readers:
            reader.join(10)
        return code, end


def _read(stream: IO[bytes], lines: list[tuple[float, str]]) -> None:
    for raw in iter(stream.readline, b""):
        lines.append((time.monotonic(), raw.decode(errors="replace").rstrip("\n")))


def env_for(tmp: Path) -> dict[str, str]:
    """No tuning service, private artifact and Inductor caches (so Inductor compiles, and
    starts its compile pool, in the command's process), the tests' modules importable."""
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "AITUNE_FP_SERVICE": "0",
        "AITUNE_FP_CACHE": str(tmp / "cache"),
        "TORCHINDUCTOR_CACHE_DIR": str(tmp / "inductor"),
        "RAY_USAGE_STATS_ENABLED": "0",
    }


@contextmanager
def console(args: list[str], cwd: Path) -> Iterator[Console]:
    """``aitune-fp *args`` started in ``cwd`` (killed if still running when the block ends)."""
    process = subprocess.Popen(
        [str(CONSOLE), *args],
        cwd=cwd,
        env=env_for(cwd),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    run = Console(process)
    for stream in (process.stdout, process.stderr):
        assert stream is not None
        reader = threading.Thread(target=_read, args=(stream, run.lines), daemon=True)
        reader.start()
        run.readers.append(reader)
    try:
        yield run
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(30)
