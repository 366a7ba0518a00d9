"""The compilers' modules the workers' fork server imports (never the tune process): the
parts of Inductor that every fresh process would otherwise pay for on its first compile or
load. (It imports modules ahead of time; it has nothing to do with a profiler's warm-up.)

Rules:
- only imports of modules that exist in this torch (missing ones are skipped), and the one
  probe below (its threads joined before the server forks); no tensor is created and no
  thread is left running, so forking the server stays safe;
- Inductor's lowering, scheduler, code generators and graph passes are a few seconds of
  imports that the inductor and AOTInductor workers would each pay again; importing them
  once here makes every worker start with them, as a tune without isolation does after its
  first compile;
- Inductor's CPU vector-ISA probe (:func:`~aitune_fp.effects.machine.preload.probe_vector_isa`)
  runs here once: it dry-compiles a test program per ISA and loads each in a short-lived
  child Python (about 1–3 s on this 2-core machine), and torch caches its answer only in
  the process. Every Inductor JIT compile, AOTInductor compile and ``.pt2`` load asks
  for it first, so without this each such worker paid it again; a forked worker now
  inherits the answer. The probe runs in a thread started when the server imported
  :mod:`.compiler_probe` (right after torch), so it overlaps every preload after it, and
  is joined here, before the server forks anything: no thread is left, and its children
  have all exited;
- ``AITUNE_FP_WARM_COMPILERS=0`` turns all of it off (the worker then pays as a fresh
  process does).
"""

from __future__ import annotations

import contextlib
import importlib
import os
from typing import Final

MODULES: Final = (
    "torch._inductor.lowering",
    "torch._inductor.decomposition",
    "torch._inductor.graph",
    "torch._inductor.scheduler",
    "torch._inductor.pattern_matcher",
    "torch._inductor.fx_passes.joint_graph",
    "torch._inductor.fx_passes.post_grad",
    "torch._inductor.fx_passes.pre_grad",
    "torch._inductor.codegen.cpp",
    "torch._inductor.codegen.cpp_wrapper_cpu",
    "torch._inductor.codegen.wrapper",
    "torch._inductor.select_algorithm",
    "torch._functorch.aot_autograd",
    "torch._dynamo.convert_frame",
    "torch.export",
)


if os.environ.get("AITUNE_FP_WARM_COMPILERS", "1") != "0":
    from aitune_fp.effects.isolation import compiler_probe  # started already, or now

    for name in MODULES:
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    if compiler_probe.PROBING is not None:
        compiler_probe.PROBING.join()
