"""Which generation candidates a tune still builds: the wall budget and what is known already.

Rules: an all-eager candidate is always measured (it compiles nothing). A compiling candidate
is skipped, with the reason recorded as its failure, when
1. a build it needs (backend kind and dtype) already failed in this tune: the same build
   would fail again (its failure is repeated);
2. its dtype is not float32 and the eager candidate of that dtype already fails the accuracy
   policy: a compiled copy computes in the same precision, so it cannot pass where eager did
   not, and its build time is saved;
3. the tune has spent so much of its wall budget that the longest build so far would overrun
   it (not when its build is already under way: started ahead, it only needs waiting for;
   nor for a thread twin whose plain candidate is built, or an OpenVINO variant whose step
   is converted already: neither repeats the export the longest build measured).
A build that does run gets what is left of the wall budget, at most the per-build budget.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aitune_fp.core.generation.records import GenerationResult


@dataclass(frozen=True, slots=True)
class TuneClock:
    """Seconds spent so far, the longest build so far, and the tune's wall budget."""

    elapsed_s: float
    longest_build_s: float
    wall_budget_s: float

    def build_budget(self, per_build_s: float) -> float:
        """What a build may take: the rest of the wall budget, at most ``per_build_s``.

        >>> TuneClock(100.0, 30.0, 150.0).build_budget(120.0)
        50.0
        """
        return max(min(per_build_s, self.wall_budget_s - self.elapsed_s), 0.0)


def build_id(kind: str, dtype: str) -> str:
    """The name of one build: a backend kind in one dtype.

    >>> build_id("aoti", "float32")
    'aoti-float32'
    """
    return f"{kind}-{dtype}"


def skip_reason(
    kinds: frozenset[str],
    dtype: str,
    clock: TuneClock,
    eager_twin: GenerationResult | None,
    failed: Mapping[str, str],
    under_way: bool = False,
) -> str | None:
    """Why the candidate is not built (see the module rules), or ``None`` to build it.

    >>> skip_reason(frozenset({"eager"}), "float32", TuneClock(999.0, 99.0, 1.0), None, {})
    >>> skip_reason(frozenset({"aoti"}), "float32", TuneClock(100.0, 60.0, 150.0), None, {})
    'skipped: tune wall budget 150 s: 100 s spent, the longest build took 60 s'
    """
    compiled = sorted(kinds - {"eager"})
    if not compiled:
        return None
    for kind in compiled:
        if build_id(kind, dtype) in failed:
            return (
                f"skipped: the {build_id(kind, dtype)} build already failed: "
                + failed[build_id(kind, dtype)]
            )
    if dtype != "float32" and eager_twin is not None and not eager_twin.usable:
        return (
            f"skipped: eager {dtype} already fails the accuracy policy (top-1 "
            f"{eager_twin.top1:.3f}, RMS rel {eager_twin.rms_rel:.3g}); compiled it computes "
            "in the same precision"
        )
    if not under_way and clock.elapsed_s + clock.longest_build_s > clock.wall_budget_s:
        return (
            f"skipped: tune wall budget {clock.wall_budget_s:.0f} s: {clock.elapsed_s:.0f} s "
            f"spent, the longest build took {clock.longest_build_s:.0f} s"
        )
    return None


MEMORY_FACTOR = 3.0
"""A tune's memory budget in fp32 weight bytes of the model (issue 43: the peak resident
size of a tune stays within 3x the model's fp32 weights)."""

RESIDENT: dict[tuple[str, str], float] = {
    ("aoti-full", "float32"): 1.0,
    ("aoti-full", "bfloat16"): 0.5,
    ("onnx-full", "float32"): 1.0,
    ("openvino-full", "float32"): 2.0,
    ("openvino-full", "bfloat16"): 2.2,
    ("openvino-int8", "float32"): 1.3,
    ("openvino-int4", "float32"): 1.3,
    ("torch-full", "bfloat16"): 0.5,
}
"""The most a candidate's build and stepper hold at once, in fp32 weight bytes of the model
(measured as the peak's rise on the 0.5B model, docs/generation.md): OpenVINO's CPU plugin
keeps a model's constants and their repacked copy (f32: 3.44 GiB for 1.84 GiB of weights;
bf16 from the f32 step: a 3.96 GiB rise); NNCF's compression reads the f32 step (int8: a
2.3 GiB rise); a bf16 torch copy is half the weights. Absent: nothing beyond the model
(eager over the model itself)."""


def resident_need(kinds: frozenset[str], weights: str, dtype: str, fp32_bytes: float) -> float:
    """The bytes a candidate's stepper holds beside the model (:data:`RESIDENT`): the most
    over its phases' kinds.

    >>> resident_need(frozenset({"openvino"}), "int8", "float32", 1e9)
    1300000000.0
    >>> resident_need(frozenset({"eager"}), "full", "float32", 1e9)
    0.0
    """
    kind = "torch" if kinds <= {"eager", "inductor"} else ""
    found = [RESIDENT.get((f"{k}-{weights}", dtype), 0.0) for k in kinds]
    if kind:
        found.append(RESIDENT.get((f"torch-{weights}", dtype), 0.0))
    return max(found, default=0.0) * fp32_bytes


def memory_budget(weight_bytes: float, in_use_at_start: float) -> float:
    """The tune's memory budget: :data:`MEMORY_FACTOR` fp32 weights, at least what the
    process held at the start plus 1 GiB (a small model's budget is the runtime's, not 3x a
    few megabytes).

    >>> memory_budget(2e9, 2.5e9), memory_budget(1e6, 5e8) == 5e8 + 2**30
    (6000000000.0, True)
    """
    return max(MEMORY_FACTOR * weight_bytes, in_use_at_start + 2**30)


def memory_reason(in_use: float, need: float, budget: float) -> str | None:
    """Why a build that would hold ``need`` bytes beside ``in_use`` is skipped under
    ``budget``, or None.

    >>> memory_reason(2.4 * 2**30, 3.7 * 2**30, 5.5 * 2**30)
    'skipped: memory: it would hold 3.7 GiB beside the 2.4 GiB in use, past the 5.5 GiB budget'
    >>> memory_reason(2.4 * 2**30, 1.0 * 2**30, 5.5 * 2**30)
    """
    if in_use + need <= budget:
        return None
    gib = 2**30
    return (
        f"skipped: memory: it would hold {need / gib:.1f} GiB beside the {in_use / gib:.1f} "
        f"GiB in use, past the {budget / gib:.1f} GiB budget"
    )
