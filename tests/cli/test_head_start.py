"""The CLI's head start for the fork server: the same libraries as the backends, no torch."""

from __future__ import annotations

import subprocess
import sys

from aitune_fp.cli.head_start import LIBRARIES
from aitune_fp.effects.backends.registry import all_backends, backend_by_name
from aitune_fp.effects.machine.preload import libraries_of

SCRIPT = """
import argparse, sys
from aitune_fp.cli.head_start import head_start
from aitune_fp.effects.isolation import server
head_start(argparse.Namespace(command="tune", backends=("onnxruntime",), no_isolation=False))
print("torch" in sys.modules, server.running(), "onnxruntime" in server.preloaded())
head_start(argparse.Namespace(command="tune", backends=None, no_isolation=False))
print("torch._inductor.compile_fx" in server.preloaded())
"""


def test_the_table_names_every_backends_preloaded_libraries() -> None:
    """Each backend's libraries (those a server may preload) are the table's for its name."""
    for name, libraries in LIBRARIES.items():
        assert libraries_of(backend_by_name(name)) == libraries
    for backend in all_backends():
        listed = set(libraries_of(backend))
        if listed and not listed <= {"torch.onnx", "onnxscript", "torch.export"}:
            assert backend.name in LIBRARIES, backend.name


def test_the_head_start_runs_the_server_without_importing_torch_here() -> None:
    """A head start leaves torch unimported in the CLI process while the server imports the
    named backends' libraries; a later start for more libraries gets them (one restart)."""
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=240, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["False", "True", "True", "True"]
