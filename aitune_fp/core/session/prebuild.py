"""Build while nothing is timed: which candidates are built ahead, and when.

Builds of different candidates need no quiet machine; timing does. So, before the
baseline is built (before anything is timed), the session may ask for some candidates to
be built ahead, several at once (:class:`~aitune_fp.core.session.commands.Prebuild`):
each such build only fills a cache (the artifact cache, or the compiler's own), and the
sweep later builds, validates and profiles every candidate exactly as it would have
(its build then only loads). The rules:

- a candidate is built ahead only when its build can be (``SessionPlan.ahead``, from
  :func:`buildable_ahead` over the :class:`BuildTraits` the interpreter reports) and the
  strategy admits it;
- a build can be ahead when it fills a cache the sweep's build then reads (an artifact the
  artifact cache does not hold yet, or a compiler cache of the backend's own) and never
  when it times kernels (TensorRT's tactics, autotuning modes: that needs a quiet
  machine, as any timing does); when no candidate would fill the artifact cache (a re-tune
  of the same model), nothing is built ahead: the compilers' own caches are warm then, and
  building them ahead would only compile twice;
- the builds that compile code (``BuildTraits.compiles``: Inductor, AOTInductor) start
  first, longest builds first as a list scheduler wants (on the demo CNN they are 9-10 s
  each, a translation 0.2-2 s): a compiling build started last would run alone while the
  other slots idle. Within each kind, variants come after the other candidates: a
  variant is pruned when its base is measured far behind the best
  (:mod:`~aitune_fp.core.session.pruning`), which nobody knows yet, so its build ahead may
  be wasted work, and a pruned variant's build ahead changes no decision (the sweep still
  never builds it). ``SessionPlan.ahead`` keeps that order (:func:`buildable_ahead`);
- nothing is built ahead for a strategy that may settle early (``Strategy.settled``:
  later candidates may never be built), nor with fewer than two builds allowed at once
  (``SessionPlan.parallel``: one at a time overlaps nothing and would only build twice),
  nor when fewer than two candidates qualify (one build overlaps nothing);
- the command asks for ``min(parallel, number of names)`` builds at once, in the order of
  ``SessionPlan.ahead`` (the user's order within each kind); it is the session's first
  command, answered by one ``Prebuilt``, and nothing else runs (nothing is timed) until
  every build ahead has ended;
- the ``Prebuilt`` answer changes no decision: the commands after it, and the selection,
  are those of the same session without building ahead (a law); each failure it reports
  is said as a warning only (the sweep's own build records the real one).

>>> from aitune_fp.core.strategies import first_wins, max_throughput
>>> from aitune_fp.core.session.state import SessionPlan
>>> plan = SessionPlan(max_throughput, ("a", "b", "c"), ahead=("c", "a", "b"), parallel=2)
>>> prebuild_of(plan)
Prebuild(names=('c', 'a', 'b'), parallel=2)
>>> prebuild_of(SessionPlan(max_throughput, ("a", "b", "c"), ahead=("b", "c", "a"), parallel=4))
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
class BuildTraits:
    """What the interpreter knows of one candidate's build, as its backend declares it.

    ``times_kernels``: the build picks kernels by timing them; ``fills_artifact_cache``:
    its artifact can be loaded back, the run's artifact cache is usable and does not hold
    it yet; ``warms_own_cache``: the build fills a compiler cache of its own that the
    sweep's build reads; ``compiles``: the build runs a code compiler (a long build).
    """

    times_kernels: bool = False
    fills_artifact_cache: bool = False
    warms_own_cache: bool = False
    compiles: bool = False


def buildable_ahead(
    facts: Mapping[str, BuildTraits], variant_of: Mapping[str, str] | None = None
) -> tuple[str, ...]:
    """The candidates whose build can be ahead (see the module's rules), in the order they
    are built: those that compile first, then the others; within each, ``facts``' order
    with the variants (``variant_of``'s keys) last.

    >>> buildable_ahead({"trt": BuildTraits(times_kernels=True, fills_artifact_cache=True),
    ...                  "ort": BuildTraits(fills_artifact_cache=True),
    ...                  "jit": BuildTraits(warms_own_cache=True), "eager": BuildTraits()})
    ('ort', 'jit')
    >>> buildable_ahead({"jit": BuildTraits(warms_own_cache=True)})  # a re-tune
    ()
    >>> buildable_ahead({"jit": BuildTraits(warms_own_cache=True, compiles=True),
    ...                  "ort": BuildTraits(fills_artifact_cache=True),
    ...                  "ort8": BuildTraits(fills_artifact_cache=True),
    ...                  "jit16": BuildTraits(warms_own_cache=True, compiles=True)},
    ...                 {"jit16": "jit", "ort8": "ort"})
    ('jit', 'jit16', 'ort', 'ort8')
    """
    able = [
        n
        for n, f in facts.items()
        if not f.times_kernels and (f.fills_artifact_cache or f.warms_own_cache)
    ]
    if not any(facts[n].fills_artifact_cache for n in able):
        return ()
    variants = variant_of or {}
    return tuple(sorted(able, key=lambda n: (not facts[n].compiles, n in variants)))


def ahead_names(plan: SessionPlan) -> tuple[str, ...]:
    """The candidates ``plan`` builds ahead (see the module's rules), in ``plan.ahead``'s
    order.

    >>> from aitune_fp.core.strategies import max_throughput, one_backend
    >>> ahead_names(SessionPlan(one_backend(max_throughput, "b"), ("a", "b"), ahead=("a", "b"),
    ...                         parallel=2))
    ()
    """
    if plan.parallel < 2 or plan.strategy.settled is not None:
        return ()
    admitted = set(plan.admitted)
    ordered = tuple(n for n in plan.ahead if n in admitted)
    return ordered if len(ordered) >= 2 else ()


def prebuild_of(plan: SessionPlan) -> Prebuild | None:
    """The session's ``Prebuild`` command (``None``: nothing is built ahead)."""
    names = ahead_names(plan)
    return Prebuild(names, min(plan.parallel, len(names))) if names else None
