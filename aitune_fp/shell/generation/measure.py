"""Measure the generation candidates within the tune's budgets: build and check, then time.

Rules: building is kept apart from timing: every candidate is first built and checked
teacher-forced (:func:`prepare`), the AOTInductor compile running meanwhile in its child
process (started ahead, :func:`start_ahead`), and only then are the ready candidates timed
one after the other with nothing else of the tune running (:func:`timed_one`, called by
the session's interpreter, :mod:`aitune_fp.shell.generation.session_answer`). What the tune
learns across candidates is a frozen :class:`Preparation` value that each step returns anew
(failed builds, the longest build, the checked and ready candidates, the failures); the
tune's fixed inputs are one :class:`Measuring` value, whose :class:`~aitune_fp.shell.
generation.candidates.Steppers` cache is passed on to the generator the tune returns. A
candidate the build policy skips (``aitune_fp.core.generation.build_policy``) is recorded as
a failure at stage ``build`` with the policy's reason; a build, check or timing that raises
is turned into a failure value at that effect's edge (:func:`_attempt`), naming the
candidate, its stage and the reason, and a failure before timing marks each of its compiled
builds as failed for the rest of the tune. The build time (build plus the teacher-forced
check, where ``torch.compile`` compiles) of every compiling candidate feeds the wall-budget
estimate.

Longer than 260 lines: preparing (build, check, the skip rules) and timing share the
tune's one :class:`Preparation` value and its failure rows.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final, TypeVar

import torch
from pyrsistent import PMap, pmap
from returns.io import IOFailure, IOResult, IOSuccess
from returns.pipeline import is_successful

from aitune_fp.core.generation import GenerationResult, TuneClock, build_id, skip_reason
from aitune_fp.core.generation.accuracy_rule import MAX_KL, Figures, Limits, teacher_verdict
from aitune_fp.core.generation.records import TeacherFigures
from aitune_fp.effects.generation.loop import Stepper
from aitune_fp.effects.generation.teacher import TeacherReference, teacher_forced
from aitune_fp.effects.generation.timing import default_rule, time_stepper
from aitune_fp.effects.machine.bandwidth import weight_bytes
from aitune_fp.shell.generation.candidates import Candidate, Steppers, phase_model, reads_back
from aitune_fp.shell.generation.holding import memory_skip, release, stepper_of
from aitune_fp.shell.io import perform

Accuracy = TeacherFigures
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Policy:
    """The tune's limits: accuracy (top-1, RMS relative error) and time (wall, per build)."""

    min_top1: float = 0.99
    max_rms_rel: float = 0.1
    wall_budget_s: float = 150.0
    build_budget_s: float = 120.0
    max_kl: float = MAX_KL


@dataclass(frozen=True, slots=True)
class Measuring:
    """A tune's fixed inputs: the points, the tokens, the reference, the policy, the start
    time and the stepper cache (over the model)."""

    points: tuple[torch.Tensor, ...]
    new_tokens: int
    ref: TeacherReference | None
    policy: Policy
    started: float
    steppers: Steppers
    memory_budget: float = float("inf")


@dataclass(frozen=True, slots=True)
class Ready:
    """A built, checked candidate waiting to be timed; ``stepper`` is ``None`` when it was
    released after its check (it owns its weights) and is built again from disk to be
    timed."""

    candidate: Candidate
    stepper: Stepper | None
    accuracy: Accuracy


@dataclass(frozen=True, slots=True)
class Preparation:
    """What the tune knows after building and checking some candidates (see the rules)."""

    failed: PMap[str, str] = field(default_factory=pmap)
    longest_build_s: float = 0.0
    checked: PMap[str, GenerationResult] = field(default_factory=pmap)
    ready: tuple[Ready, ...] = ()
    failures: tuple[GenerationResult, ...] = ()


def _attempt(stage: str, name: str, effect: Callable[[], _T]) -> IOResult[_T, str]:
    """``effect()``'s value, or the failure line naming ``name``, ``stage`` and the reason."""
    try:
        return IOSuccess(effect())
    except Exception as exc:  # a user's model or a compiler: any error is this candidate's
        return IOFailure(f"{name} failed at {stage}: {type(exc).__name__}: {exc}")


AHEAD_MAX_BYTES: Final = 256 << 20
"""The largest model (weight bytes) whose AOTInductor compile starts ahead: past it the
child holds another copy of the weights and takes the cores the tune's own builds and checks
need for minutes, so the compile waits for its turn (and the wall-budget rule)."""


def start_ahead(m: Measuring, chosen: list[Candidate]) -> Preparation:
    """Start the float32 AOTInductor compile now when a chosen candidate needs it and the
    model is small enough (:data:`AHEAD_MAX_BYTES`)."""
    aoti = [c for c in chosen if c.dtype == "float32" and "aoti" in c.compiled]
    if not aoti or weight_bytes(m.steppers.model) > AHEAD_MAX_BYTES:
        return Preparation()
    model, budget = phase_model(m.steppers.model, aoti[0]), m.policy.build_budget_s
    started = perform(
        _attempt("export", aoti[0].name, lambda: m.steppers.aoti.start(model, budget))
    )
    if is_successful(started):
        return Preparation()
    why = started.failure().split(" failed at ", 1)[1]
    return Preparation(failed=pmap({build_id("aoti", "float32"): why}))


def _clock(m: Measuring, state: Preparation) -> TuneClock:
    spent = time.perf_counter() - m.started
    return TuneClock(spent, state.longest_build_s, m.policy.wall_budget_s)


def prepare(m: Measuring, state: Preparation, cand: Candidate) -> Preparation:
    """``state`` with ``cand`` built and checked (or why not); it is timed by :func:`timed_one`."""
    twin = state.checked.get("eager_static" + ("" if cand.dtype == "float32" else "_bf16"))
    clock = _clock(m, state)
    ahead = (
        "aoti" in cand.kinds
        and cand.dtype == "float32"
        and m.steppers.aoti.under_way(m.steppers.model)
    )
    built = _plain_figures(state, cand) is not None or _converted(m, cand)
    why = skip_reason(cand.kinds, cand.dtype, clock, twin, state.failed, ahead or built)
    why = why or memory_skip(m.steppers, cand, m.memory_budget)
    if why is not None:
        return _fail(m, state, cand, f"{cand.name} {why}")
    start = time.perf_counter()
    known = _plain_figures(state, cand)
    made = perform(_built_and_checked(m, cand, clock.build_budget(m.policy.build_budget_s), known))
    if not is_successful(made):
        why = str(made.failure())
        failed = state.failed.update({build_id(k, cand.dtype): why for k in cand.compiled})
        return _fail(m, replace(state, failed=failed), cand, why)
    return _ready(m, state, cand, made.unwrap(), time.perf_counter() - start)


def _converted(m: Measuring, cand: Candidate) -> bool:
    """True for an OpenVINO candidate whose step is converted already: its build is a
    compression and a compile, not the export the longest build so far measured."""
    return reads_back(m.steppers, cand)


def _plain_figures(state: Preparation, cand: Candidate) -> Accuracy | None:
    """A thread twin's figures: its plain candidate's, when that one is checked (threads
    change where a sum is split, not what the step computes: one check serves both)."""
    if not cand.threads:
        return None
    plain = cand.name.removesuffix(f"_{cand.threads}thread")
    return next((r.accuracy for r in state.ready if r.candidate.name == plain), None)


def _built_and_checked(
    m: Measuring, cand: Candidate, budget_s: float, known: Accuracy | None = None
) -> IOResult[tuple[Stepper, Accuracy], str]:
    """The candidate's stepper from the cache and its teacher-forced accuracy (``known``:
    its plain twin's), or why not."""

    ref = m.ref
    if ref is None:
        return IOFailure(f"{cand.name} failed at build: no teacher reference (nothing to check)")

    def checked(stepper: Stepper) -> IOResult[tuple[Stepper, Accuracy], str]:
        check = "teacher-forced check"
        if known is not None:
            return IOSuccess((stepper, known))
        return _attempt(check, cand.name, lambda: (stepper, teacher_forced(stepper, ref)))

    return _attempt("build", cand.name, lambda: m.steppers.get(cand, budget_s)).bind(checked)


def _ready(
    m: Measuring, state: Preparation, cand: Candidate, made: tuple[Stepper, Accuracy], took: float
) -> Preparation:
    stepper, accuracy = made
    kept: Stepper | None = stepper
    if cand.owns_weights:
        release(m.steppers, cand)
        kept = None
    longest = max(state.longest_build_s, took) if cand.costly else state.longest_build_s
    checked = _judged(m.policy, _result(cand, m.points[0], 0, (0.0, 0.0), accuracy), _positions(m))
    return replace(
        state,
        longest_build_s=longest,
        checked=state.checked.set(cand.name, checked),
        ready=(*state.ready, Ready(cand, kept, accuracy)),
    )


def timed_one(m: Measuring, ready: Ready) -> list[GenerationResult] | str:
    """Every point's judged result for ``ready``, or the failure line of its timing."""
    cand = ready.candidate
    rule = default_rule()

    def timed() -> list[tuple[float, float]]:
        stepper = stepper_of(m.steppers, cand, ready.stepper, m.policy.build_budget_s)
        try:
            return [time_stepper(stepper, ids, m.new_tokens, rule) for ids in m.points]
        finally:
            release(m.steppers, cand)

    made = perform(_attempt("timing", cand.name, timed))
    if not is_successful(made):
        return str(made.failure())
    return [
        _judged(m.policy, _result(cand, ids, m.new_tokens, phases, ready.accuracy), _positions(m))
        for ids, phases in zip(m.points, made.unwrap(), strict=True)
    ]


def refuse(
    m: Measuring, state: Preparation, cands: Sequence[Candidate], reasons: Mapping[str, str]
) -> Preparation:
    """``state`` with each of ``cands`` recorded as failed with its refusal reason (on a
    device where it is not proven: never built)."""
    for cand in cands:
        state = _fail(m, state, cand, reasons[cand.name])
    return state


def _fail(m: Measuring, state: Preparation, cand: Candidate, failure: str) -> Preparation:
    more = tuple(failed(cand, ids, m.new_tokens, failure) for ids in m.points)
    return replace(state, failures=(*state.failures, *more))


def _judged(policy: Policy, r: GenerationResult, positions: int) -> GenerationResult:
    """``r`` with the policy's verdict on its teacher-forced figures (over ``positions``)."""
    figures = Figures(r.top1, r.rms_rel, positions, r.kl, r.clear_positions, r.clear_top1)
    limits = Limits(policy.min_top1, policy.max_rms_rel, policy.max_kl)
    v = teacher_verdict(figures, r.precision, limits)
    return replace(
        r, accurate=v.accurate, positions=positions, top1_lower=v.lower, positions_needed=v.needed
    )


def _positions(m: Measuring) -> int:
    """The held-out positions the teacher-forced check covers (0: no reference)."""
    return int(m.ref.continuation.numel()) if m.ref is not None else 0


def _result(
    cand: Candidate, ids: torch.Tensor, new: int, phases: tuple[float, float], accuracy: Accuracy
) -> GenerationResult:
    return GenerationResult(
        cand.name,
        cand.prefill_backend,
        cand.decode_backend,
        ids.shape[0],
        ids.shape[1],
        new,
        phases[0],
        phases[1],
        accuracy.top1,
        accuracy.rms_rel,
        accuracy.first_divergence,
        kl=accuracy.kl,
        clear_positions=accuracy.clear_positions,
        clear_top1=accuracy.clear_top1,
    )


def failed(cand: Candidate, ids: torch.Tensor, new: int, failure: str) -> GenerationResult:
    """A failed candidate's result at one point: infinite latencies, no accuracy."""
    inf = float("inf")
    none = TeacherFigures(0.0, inf)
    return replace(_result(cand, ids, new, (inf, inf), none), accurate=False, failure=failure)
