"""Load the backends' libraries before anything is measured, so no backend pays for them.

Rules:
- a backend config may list, in a class attribute ``libraries``, the Python modules its
  build imports (``onnxruntime``, ``torch._inductor``, …); configs without it need none;
- :func:`preload` imports those of every config that can run on the device, once each,
  in order, before the baseline is built: the shared libraries and modules they load stay
  resident for the whole process, and would otherwise be charged to the peak memory
  (:mod:`aitune_fp.effects.memory`) and the build time of whichever backend imports them
  first, making both depend on the order of the candidates;
- a library that is not installed or fails to import is skipped (that backend's own
  availability check or build reports it); nothing here raises;
- the caller decides which configs to pass: a strategy that will never build some
  backends (``one_backend``) should not pay for their libraries.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import sys
import time
from collections.abc import Iterable

import torch

log = logging.getLogger("aitune_fp")


def libraries_of(config: object) -> tuple[str, ...]:
    """The modules ``config``'s build imports, from its ``libraries`` attribute (or none).

    >>> from aitune_fp.effects.backends.ort import OnnxRuntime
    >>> from aitune_fp.effects.backends.eager import TorchEager
    >>> "onnxruntime" in libraries_of(OnnxRuntime()), libraries_of(TorchEager())
    (True, ())
    """
    listed = getattr(config, "libraries", ())
    if not isinstance(listed, tuple) or not all(isinstance(n, str) for n in listed):
        return ()
    return listed


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def preload(configs: Iterable[object], device: torch.device) -> tuple[str, ...]:
    """Import the libraries of the configs that can run on ``device``; the newly loaded ones.

    A config counts as runnable when its ``unavailable_reason(device)`` is ``None`` (configs
    without that method count as runnable).

    >>> from aitune_fp.effects.backends.eager import TorchEager
    >>> preload([TorchEager()], torch.device("cpu"))
    ()
    """
    wanted: list[str] = []
    for config in configs:
        reason = getattr(config, "unavailable_reason", None)
        if callable(reason) and reason(device) is not None:
            continue
        wanted.extend(n for n in libraries_of(config) if n not in wanted)
    loaded = []
    for name in wanted:
        if name in sys.modules or not _installed(name):
            continue
        began = time.perf_counter()
        try:
            importlib.import_module(name)
        except Exception as error:  # a broken SDK is reported by its backend, not here
            log.info("preloading %s failed: %s", name, error)
            continue
        loaded.append(name)
        log.info("preloaded %s in %.2f s", name, time.perf_counter() - began)
    return tuple(loaded)
