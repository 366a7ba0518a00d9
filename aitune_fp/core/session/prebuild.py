"""Build while nothing is timed: which candidates are built ahead, and when.

Builds of different candidates need no quiet machine; timing does. So, before the
baseline is built (before anything is timed), the session may ask for some candidates to
be built ahead, several at once (:class:`~aitune_fp.core.session.commands.Prebuild`):
each such build only fills a cache (the artifact cache, or the compiler's own), and the
sweep later builds, validates and profiles every candidate exactly as it would have
(its build then only loads). The rules:

- a candidate is built ahead only when its build can be (``SessionPlan.ahead``, from
  :func:`buildable_ahead` over the :class:`BuildFacts` the interpreter reports) and the
  strategy admits it;
- a build can be ahead when it fills a cache the sweep's build then reads (an artifact the
  artifact cache does not hold yet, or a compiler cache of the backend's own) and never
  when it times kernels (TensorRT's tactics, autotuning modes: that needs a quiet
  machine, as any timing does); when no candidate would fill the artifact cache (a re-tune
  of the same model), nothing is built ahead: the compilers' own caches are warm then, and
  building them ahead would only compile twice;
- variants come after every other candidate: a variant is pruned when its base is
  measured far behind the best (:mod:`~aitune_fp.core.session.pruning`), which nobody
  knows yet, so its build ahead may be wasted work; placed last, it takes a slot the
  longer builds leave idle, and a pruned variant's build ahead changes no decision (the
  sweep still never builds it);
- nothing is built ahead for a strategy that may settle early (``Strategy.settled``:
  later candidates may never be built), nor with fewer than two builds allowed at once
  (``SessionPlan.parallel``: one at a time overlaps nothing and would only build twice),
  nor when fewer than two candidates qualify (one build overlaps nothing);
- the command asks for ``min(parallel, number of names)`` builds at once, in the user's
  order (variants last); it is the session's first command, answered by one
  ``Prebuilt``, and nothing else runs (nothing is timed) until every build ahead has
  ended;
- the ``Prebuilt`` answer changes no decision: the commands after it, and the selection,
  are those of the same session without building ahead (a law); each failure it reports
  is said as a warning only (the sweep's own build records the real one).

>>> from aitune_fp.core.strategies import first_wins, max_throughput
>>> from aitune_fp.core.session.state import SessionPlan
>>> plan = SessionPlan(max_throughput, ("a", "b", "c"), ahead=("a", "b", "c"), parallel=2)
>>> prebuild_of(plan)
Prebuild(names=('a', 'b', 'c'), parallel=2)
>>> from pyrsistent import pmap
>>> prebuild_of(SessionPlan(max_throughput, ("a", "b", "c"), variant_of=pmap({"a": "c"}),
...                         ahead=("a", "b", "c"), parallel=4))
Prebuild(names=('b', 'c', 'a'), parallel=3)
>>> prebuild_of(SessionPlan(first_wins(max_throughput), ("a", "b"), ahead=("a", "b"),
...                         parallel=2)) is None
True
>>> prebuild_of(SessionPlan(max_throughput, ("a", "b"), ahead=("a", "b"), parallel=1)) is None
True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aitune_fp.core.session.commands import Prebuild
from aitune_fp.core.session.state import SessionPlan


@dataclass(frozen=True, slots=True)
class BuildFacts:
    """What the interpreter knows of one candidate's build, as its backend declares it.

    ``times_kernels``: the build picks kernels by timing them; ``fills_artifact_cache``:
    its artifact can be loaded back, the run's artifact cache is usable and does not hold
    it yet; ``warms_own_cache``: the build fills a compiler cache of its own that the
    sweep's build reads.
    """

    times_kernels: bool = False
    fills_artifact_cache: bool = False
    warms_own_cache: bool = False


def buildable_ahead(facts: Mapping[str, BuildFacts]) -> tuple[str, ...]:
    """The candidates whose build can be ahead (see the module's rules), in ``facts``' order.

    >>> buildable_ahead({"trt": BuildFacts(times_kernels=True, fills_artifact_cache=True),
    ...                  "ort": BuildFacts(fills_artifact_cache=True),
    ...                  "jit": BuildFacts(warms_own_cache=True), "eager": BuildFacts()})
    ('ort', 'jit')
    >>> buildable_ahead({"jit": BuildFacts(warms_own_cache=True)})  # a re-tune
    ()
    """
    able = {n: f for n, f in facts.items()
            if not f.times_kernels and (f.fills_artifact_cache or f.warms_own_cache)}  # fmt: skip
    return tuple(able) if any(f.fills_artifact_cache for f in able.values()) else ()


def ahead_names(plan: SessionPlan) -> tuple[str, ...]:
    """The candidates ``plan`` builds ahead (see the module's rules), in the user's order.

    >>> from aitune_fp.core.strategies import max_throughput, one_backend
    >>> ahead_names(SessionPlan(one_backend(max_throughput, "b"), ("a", "b"), ahead=("a", "b"),
    ...                         parallel=2))
    ()
    """
    if plan.parallel < 2 or plan.strategy.settled is not None:
        return ()
    can = set(plan.ahead)
    names = [n for n in plan.admitted if n in can]
    ordered = (*(n for n in names if n not in plan.variant_of),
               *(n for n in names if n in plan.variant_of))  # fmt: skip
    return ordered if len(ordered) >= 2 else ()


def prebuild_of(plan: SessionPlan) -> Prebuild | None:
    """The session's ``Prebuild`` command (``None``: nothing is built ahead)."""
    names = ahead_names(plan)
    return Prebuild(names, min(plan.parallel, len(names))) if names else None
