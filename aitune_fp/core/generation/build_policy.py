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
