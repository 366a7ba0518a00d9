"""A head start for the workers' fork server: started before this process imports torch.

Rules:
- ``aitune-fp tune`` and ``demo`` with isolation (the default) start the fork server
  (:mod:`aitune_fp.effects.isolation.server`) right after the command line is parsed,
  before this process imports torch, so that the server's imports (torch, the backends'
  libraries, Inductor's CPU probe) run while this process does its own (the two used to
  follow each other: the first worker waited for the server);
- the libraries are the named backends' (:data:`LIBRARIES`, a copy of what each
  backend's declaration gives :func:`~aitune_fp.effects.machine.preload.libraries_of`, kept here
  because reading the declarations imports torch; a test keeps them equal; default: every
  backend in it); the tune later asks for what it needs, finds it imported and reuses the server,
  so a backend left out of this table costs one server restart, never a wrong result;
- nothing here raises: a server that cannot start now is started by the tune as before.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
from typing import Final

log = logging.getLogger("aitune_fp")

LIBRARIES: Final[dict[str, tuple[str, ...]]] = {
    "inductor": ("torch._dynamo", "torch._inductor.compile_fx"),
    "aot_inductor": ("torch.export", "torch._inductor", "torch._inductor.package"),
    "onnxruntime": ("torch.onnx", "onnxscript", "onnxruntime"),
    "openvino": ("torch.onnx", "onnxscript"),
}
COMMANDS: Final = frozenset({"tune", "demo"})


def head_start(args: argparse.Namespace) -> None:
    """Start the fork server for ``args``'s backends now (tune and demo, isolated only)."""
    if getattr(args, "command", None) not in COMMANDS or getattr(args, "no_isolation", False):
        return
    names = getattr(args, "backends", None) or tuple(LIBRARIES)
    libraries = [lib for name in names for lib in LIBRARIES.get(str(name), ())]
    from aitune_fp.effects.isolation import server  # stdlib only: no torch here

    cuda = str(getattr(args, "device", "") or "").startswith("cuda")
    with contextlib.suppress(Exception):
        server.start(libraries, cuda=cuda)
