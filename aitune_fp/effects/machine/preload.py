"""Load the backends' libraries before anything is measured, so no backend pays for them.

Rules:
- a backend declares the Python modules its build imports (``onnxruntime``,
  ``torch._inductor``, …) in its declaration's ``libraries``
  (:class:`~aitune_fp.effects.backends.base.Declaration`); eager declares none;
- :func:`preload` imports those of every config that can run on the device, once each,
  in order, before the baseline is built: the shared libraries and modules they load stay
  resident for the whole process, and would otherwise be charged to the peak memory
  (:mod:`aitune_fp.effects.measure.memory`) and the build time of whichever backend imports them
  first, making both depend on the order of the candidates;
- a library that is not installed or fails to import is skipped (that backend's own
  availability check or build reports it); nothing here raises;
- the caller decides which configs to pass: a strategy that will never build some
  backends (``one_backend``) should not pay for their libraries;
- when a listed library is part of Inductor (``torch._inductor…``), Inductor's CPU
  vector-ISA probe runs too (:func:`probe_vector_isa`:
  seconds of test compiles and child processes that torch caches per process, and that the
  first compile or ``.pt2`` load would otherwise pay), in a thread of its own started
  before the imports and joined after them (:func:`probe_started`);
- the workers' fork server imports a backend's libraries but those its declaration lists
  in ``server_skips`` (:func:`libraries_of`; TensorRT and Torch-TensorRT may touch CUDA
  on import, which a fork server must not);
- a tune whose backends run in workers calls :func:`preload` here only for a backend it
  is about to run in this process (the final rounds, the tuned module;
  :mod:`aitune_fp.effects.isolation.isolated`).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import logging
import os
import platform
import sys
import threading
import time
from collections.abc import Iterable
from typing import Any

import torch

from aitune_fp.effects.backends.base import Backend

log = logging.getLogger("aitune_fp")


def libraries_of(config: Backend) -> tuple[str, ...]:
    """The modules of ``config``'s build that the workers' fork server may import for it:
    its declaration's ``libraries`` but its ``server_skips`` (they may touch CUDA on
    import; :func:`preload` in this process imports them all).

    >>> from aitune_fp.effects.backends.ort import OnnxRuntime
    >>> from aitune_fp.effects.backends.trt import TensorRT
    >>> "onnxruntime" in libraries_of(OnnxRuntime()), libraries_of(TensorRT())
    (True, ('torch.onnx', 'onnxscript'))
    """
    declared = config.declaration
    return tuple(n for n in declared.libraries if n not in declared.server_skips)


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def preload(configs: Iterable[Backend], device: torch.device) -> tuple[str, ...]:
    """Import the libraries of the configs that can run on ``device``; the newly loaded ones.

    A config counts as runnable when its ``unavailable_reason(device)`` is ``None``.

    >>> from aitune_fp.effects.backends.eager import TorchEager
    >>> preload([TorchEager()], torch.device("cpu"))
    ()
    """
    wanted: list[str] = []
    for config in configs:
        if config.unavailable_reason(device) is not None:
            continue
        wanted.extend(n for n in config.declaration.libraries if n not in wanted)
    inductor = any(n.startswith("torch._inductor") for n in wanted)
    probing = probe_started() if inductor and not _probed() else None
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
    if probing is not None:
        began = time.perf_counter()
        probing.join()
        log.info("waited %.2f s for Inductor's CPU vector-ISA probe", time.perf_counter() - began)
    return tuple(loaded)


def _probed() -> bool:
    """Whether Inductor's ISA list is answered in this process already (torch's own list
    asked, or the first valid ISA served: :func:`_first_valid_only`), so a later
    :func:`preload` (one per runner a tune makes here) does not start the probe again."""
    module = sys.modules.get("torch._inductor.cpu_vec_isa")
    if module is None:
        return False
    info = getattr(module.valid_vec_isa_list, "cache_info", None)
    return info is None or info().currsize > 0


def probe_vector_isa() -> None:
    """Run, and so cache in this process, Inductor's CPU vector-ISA choice; never raises.

    ``torch._inductor.cpu_vec_isa.valid_vec_isa_list`` dry-compiles a test program per
    vector ISA the CPU's flags allow (some more than once) and loads each in a short-lived
    child Python; torch caches the answers only in the process that asked, and Inductor
    uses only the first valid one (``pick_vec_isa``). On x86 the ISAs are asked best first
    and the asking stops at the first that builds (:func:`_first_valid_only`); elsewhere,
    or if that fails, torch probes as it does.
    """
    with contextlib.suppress(Exception):
        from torch._inductor import cpu_vec_isa

        with contextlib.suppress(Exception):  # a failure here leaves torch's own probe to it
            _first_valid_only(cpu_vec_isa)
        cpu_vec_isa.pick_vec_isa()


PROBE_IMPORTS = (
    "torch._inductor.cpu_vec_isa",
    "torch._inductor.codecache",
    "torch._inductor.cpp_builder",
    "torch.utils._filelock",
)
"""What :func:`probe_vector_isa` imports (``check_build`` imports the last three lazily)."""


def probe_started() -> threading.Thread:
    """:func:`probe_vector_isa` started in a thread of its own (the caller imports
    meanwhile: the probe waits on compilers and child processes, the imports on the
    interpreter, so they overlap) and ``join()``s it before anything compiles or forks.
    The modules the probe itself imports (:data:`PROBE_IMPORTS`) are imported first, in
    the caller's thread, so no module is ever imported by both threads at once."""
    for name in PROBE_IMPORTS:  # here, not in the thread: two threads importing Inductor at
        with contextlib.suppress(Exception):  # once see its modules half-initialised
            importlib.import_module(name)
    thread = threading.Thread(target=probe_vector_isa, name="aitune_fp-isa-probe", daemon=True)
    thread.start()
    return thread


def _first_valid_only(cpu_vec_isa: Any) -> None:
    """Ask the vector ISAs this CPU's flags allow whether they build, in torch's order of
    preference, and stop at the first that does; then serve ``valid_vec_isa_list`` as that
    one alone while nothing asks for another.

    Rules:
    - only on x86 Linux, where torch's list holds several ISAs the flags may allow (AMX,
      AVX-512 VNNI, AVX-512, AVX2), and only once (torch's own list not asked yet);
    - Inductor reads the list only through ``pick_vec_isa``, which takes its first entry
      unless ``ATEN_CPU_CAPABILITY`` names an ISA or ``cpp.simdlen`` asks for a width: the
      served list is torch's own answer, probed in full then (so a choice is never
      narrowed), and the first valid ISA alone otherwise: the same pick, with the
      builds of the ISAs it would pass over never run. On this 2-core AVX-512 VNNI machine
      torch's full probe is six test builds, about 7 s of CPU (three of the full vector
      headers); the first valid ISA alone is three, one of them full: about 2.6 s.
    """
    if platform.machine() not in ("x86_64", "AMD64") or sys.platform != "linux":
        return
    full = cpu_vec_isa.valid_vec_isa_list
    if getattr(full, "cache_info", None) is None or full.cache_info().currsize:
        return
    flags = cpu_vec_isa.x86_isa_checker()
    allowed = [
        i
        for i in cpu_vec_isa.supported_vec_isa_list
        if all(flag in flags for flag in str(i).split())
    ]
    first = next((isa for isa in allowed if isa), None)
    config = cpu_vec_isa.config

    def served() -> list[Any]:
        if os.environ.get("ATEN_CPU_CAPABILITY") or config.cpp.simdlen is not None:
            return list(full())
        return [first] if first is not None else []

    cpu_vec_isa.valid_vec_isa_list = served
