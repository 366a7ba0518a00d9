"""Every command that can compile in its own process ends: the installed console script
(not ``main()``) exits soon after its last output and its files, with the command's code,
after ``tune-generate`` with a compiled candidate, ``tune`` keeping an Inductor pick,
``load`` of that pick, and ``serve`` of compiled picks stopped by SIGINT and SIGTERM.

Before the fix, any ``torch.compile`` in the process left Inductor's compile pool (a
``ThreadPoolExecutor`` whose worker is not a daemon) waiting for work, and the console
script's exit joined it forever."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.console_run import Console, console
from tests.serving.serve_process import call, free_port

pytestmark = pytest.mark.heavy
pytest.importorskip("transformers")

EXIT_SECONDS = 10.0  # the bound after the last output (and the files written)
STOP_SECONDS = 30.0  # a server's bound after the signal
WORK_SECONDS = 400.0  # far above the work itself: a hang is caught, never waited for long

LM = """
from tests.tiny_hf import tiny_llama

def build():
    return tiny_llama(vocab=256)
"""

CHAIN = """
import torch

class Chain(torch.nn.Module):
    def forward(self, x):
        for _ in range(24):
            x = torch.sin(x) * 1.01 + 0.1
        return x

def build():
    return Chain()
"""


def _ended_soon(run: Console, *written: Path) -> int | None:
    """The command's exit code, after checking it ended within EXIT_SECONDS of its last
    output and of its files' last write (a command still running past that is killed and
    fails at once, not after WORK_SECONDS)."""
    deadline = time.monotonic() + WORK_SECONDS
    while run.process.poll() is None and time.monotonic() < deadline:
        if (
            all(p.exists() for p in written)
            and time.monotonic() - _last(run, written) > 3 * EXIT_SECONDS
        ):
            break
        time.sleep(0.5)
    code, end = run.ended(0.1)
    assert code is not None, (
        f"still running {end - _last(run, written):.0f} s after its last output"
    )
    assert end - _last(run, written) <= EXIT_SECONDS, (
        f"ended {end - _last(run, written):.1f} s late"
    )
    return code


def _last(run: Console, written: tuple[Path, ...]) -> float:
    """When the command last printed or wrote one of ``written``."""
    return max([run.last_output(), *(_written_at(p) for p in written if p.exists())])


def _written_at(path: Path) -> float:
    """``path``'s last write on the monotonic clock the runs are timed with."""
    return time.monotonic() - (time.time() - path.stat().st_mtime)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One working folder with both model files, shared by the module's commands."""
    tmp = tmp_path_factory.mktemp("console_exits")
    (tmp / "lm.py").write_text(LM)
    (tmp / "chain.py").write_text(CHAIN)
    return tmp


@pytest.fixture(scope="module")
def generator(folder: Path) -> Path:
    """``tune-generate`` with the compiled static-cache candidate: its save."""
    saved = folder / "gen"
    args = ["tune-generate", "lm.py:build", "--prompt-lengths", "4", "--new-tokens", "2"]
    with console([*args, "--candidates", "compiled_static", "--save", str(saved)], folder) as run:
        code = _ended_soon(run, saved)
    assert code == 0, run.text()[-3000:]
    return saved


@pytest.fixture(scope="module")
def aot_pick(folder: Path) -> Path:
    """``tune`` without isolation (Inductor JIT and AOT compile in the command's own
    process) of a chain of element-wise ops, which AOTInductor fuses into one kernel and
    wins: the saved folder."""
    saved = folder / "saved"
    args = ["tune", "chain.py:build", "--input-shape", "4x4096", "--no-isolation"]
    args += ["--backends", "inductor,aot_inductor", "--max-batch-size", "4"]
    args += ["--strategy", "one-backend=aot_inductor:max-throughput"]
    args += ["--verify-seconds", "0", "--no-plot", "--out", "runs", "--save", str(saved)]
    with console(args, folder) as run:
        code = _ended_soon(run, folder / "runs" / "run.json")
    assert code == 0, run.text()[-3000:]
    assert json.loads((folder / "runs" / "run.json").read_text())["selection"]
    return saved


def test_tune_generate_with_a_compiled_candidate_ends(generator: Path) -> None:
    """tune-generate that compiled in its own process exits 0 within the bound after its
    last output and its save (the fixture's checks), and the save is a sealed generator
    folder."""
    manifest = json.loads((generator / "manifest.json").read_text())
    assert manifest["format"] == "aitune_fp.saved_generator"


def test_tune_keeping_an_aot_pick_ends(aot_pick: Path) -> None:
    """tune that compiled Inductor in its own process exits 0 within the bound after its
    record (the fixture's checks), and the saved pick is AOTInductor's."""
    manifest = json.loads((aot_pick / "manifest.json").read_text())
    assert manifest["backend"]["kind"] == "aot_inductor"


def test_load_of_a_compiled_pick_ends(folder: Path, aot_pick: Path) -> None:
    """load of the saved AOTInductor pick (it loads the compiled package and runs it once)
    exits 0 within the bound after its last output."""
    with console(["load", str(aot_pick)], folder) as run:
        code = _ended_soon(run)
    assert code == 0, run.text()[-3000:]


@pytest.fixture
def served_generator(folder: Path, generator: Path) -> Iterator[Console]:
    """``serve`` of the compiled generator pick, once GET /health answers."""
    yield from _serving(folder, [str(generator), "--module", "lm.py:build"])


def _serving(folder: Path, args: list[str]) -> Iterator[Console]:
    port = free_port()
    command = ["serve", *args, "--port", str(port), "--num-cpus", "2", "--duration", "600"]
    with console(command, folder) as run:
        deadline = time.monotonic() + 240
        while not _healthy(port):
            assert run.process.poll() is None, run.text()[-3000:]
            assert time.monotonic() < deadline, run.text()[-3000:]
            time.sleep(1.0)
        yield run


def _healthy(port: int) -> bool:
    try:
        return call(port, "GET", "/health")[0] == 200
    except OSError:
        return False


def _stopped_by(run: Console, sig: signal.Signals) -> int | None:
    """Send ``sig``; the exit code after checking the command ended within STOP_SECONDS."""
    run.process.send_signal(sig)
    sent = time.monotonic()
    code, end = run.ended(STOP_SECONDS)
    assert code is not None, f"not stopped {STOP_SECONDS} s after {sig.name}:\n{run.text()[-3000:]}"
    assert end - sent <= STOP_SECONDS
    return code


def test_serve_of_a_compiled_generator_stops_on_sigint(served_generator: Console) -> None:
    """Ctrl-C (SIGINT) ends serve of a compiled generator pick within 30 s with exit 130."""
    assert _stopped_by(served_generator, signal.SIGINT) == 130, served_generator.text()[-3000:]


def test_serve_of_a_compiled_generator_stops_on_sigterm(served_generator: Console) -> None:
    """SIGTERM ends serve of a compiled generator pick within 30 s with exit 143 (never
    Ray's abort: SIGABRT, or code 15)."""
    assert _stopped_by(served_generator, signal.SIGTERM) == 143, served_generator.text()[-3000:]
