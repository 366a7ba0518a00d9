"""Measure the generation candidates within the tune's budgets: build and check, then time.

Rules: building is kept apart from timing: every candidate is first built and checked
teacher-forced (:meth:`CandidateRun.prepare`), the AOTInductor compile running meanwhile in
its child process (started ahead, :meth:`CandidateRun.start_ahead`), and only then are the
ready candidates timed one after the other with nothing else of the tune running
(:meth:`CandidateRun.timed`). A candidate the build policy skips
(``aitune_fp.core.generation.build_policy``) is recorded as a failure at stage ``build`` with
the policy's reason; a candidate that raises is recorded as a failure naming its stage and
reason, and a failure before timing marks each of its compiled builds as failed for the rest
of the tune. The build time (build plus the teacher-forced check, where ``torch.compile``
compiles) of every compiling candidate feeds the wall-budget estimate.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import torch

from aitune_fp.core.generation import GenerationResult, TuneClock, build_id, skip_reason
from aitune_fp.effects.generation.aoti_steps import start_package, under_way
from aitune_fp.effects.generation.loop import Stepper
from aitune_fp.effects.generation.teacher import TeacherReference, teacher_forced
from aitune_fp.effects.generation.timing import default_rule, time_stepper
from aitune_fp.shell.generation.candidates import Candidate, build, phase_model

Accuracy = tuple[float, float, int | None]


@dataclass(frozen=True, slots=True)
class Policy:
    """The tune's limits: accuracy (top-1, RMS relative error) and time (wall, per build)."""

    min_top1: float = 0.99
    max_rms_rel: float = 0.1
    wall_budget_s: float = 150.0
    build_budget_s: float = 120.0


@dataclass
class CandidateRun:
    """What one tune keeps across candidates: failed builds, the longest build, the ready
    steppers with their accuracy, and every failure so far."""

    model: torch.nn.Module
    points: list[torch.Tensor]
    new_tokens: int
    ref: TeacherReference | None
    policy: Policy
    started: float = field(default_factory=time.perf_counter)
    failed: dict[str, str] = field(default_factory=dict)
    longest_build_s: float = 0.0
    checked: dict[str, GenerationResult] = field(default_factory=dict)
    ready: list[tuple[Candidate, Stepper, Accuracy]] = field(default_factory=list)
    failures: list[GenerationResult] = field(default_factory=list)

    def refuse(self, cands: list[Candidate], reasons: dict[str, str]) -> None:
        """Record each of ``cands`` as failed at build with its refusal reason (never built)."""
        for cand in cands:
            self._fail(cand, reasons[cand.name])

    def start_ahead(self, chosen: list[Candidate]) -> None:
        """Start the float32 AOTInductor compile now when a chosen candidate needs it."""
        aoti = [c for c in chosen if c.dtype == "float32" and "aoti" in _compiled(c)]
        if aoti:
            try:
                start_package(phase_model(self.model, aoti[0]), self.policy.build_budget_s)
            except Exception as exc:
                self.failed[build_id("aoti", "float32")] = f"export: {type(exc).__name__}: {exc}"

    def prepare(self, cand: Candidate) -> None:
        """Build and check ``cand`` (or record why not); it is timed by :meth:`timed`."""
        kinds = frozenset({cand.prefill_kind, cand.decode_kind})
        twin = self.checked.get("eager_static" + ("" if cand.dtype == "float32" else "_bf16"))
        clock = TuneClock(
            time.perf_counter() - self.started, self.longest_build_s, self.policy.wall_budget_s
        )
        ahead = "aoti" in kinds and cand.dtype == "float32" and under_way(self.model)
        why = skip_reason(kinds, cand.dtype, clock, twin, self.failed, ahead)
        if why is not None:
            self._fail(cand, f"{cand.name} {why}")
            return
        if self.ref is None:
            raise ValueError("a candidate is prepared only with a teacher reference")
        stage, start = "build", time.perf_counter()
        try:
            stepper = build(self.model, cand, clock.build_budget(self.policy.build_budget_s))
            stage = "teacher-forced check"
            accuracy = teacher_forced(stepper, self.ref)
        except Exception as exc:
            failure = f"{cand.name} failed at {stage}: {type(exc).__name__}: {exc}"
            self.failed.update({build_id(k, cand.dtype): failure for k in _compiled(cand)})
            self._fail(cand, failure)
            return
        if cand.costly:
            self.longest_build_s = max(self.longest_build_s, time.perf_counter() - start)
        self.checked[cand.name] = self._judged(
            _result(cand, self.points[0], 0, (0.0, 0.0), accuracy)
        )
        self.ready.append((cand, stepper, accuracy))

    def timed(self) -> list[GenerationResult]:
        """Every ready candidate timed at every point, judged; then the failures."""
        out: list[GenerationResult] = []
        for cand, stepper, accuracy in self.ready:
            try:
                timed = [
                    time_stepper(stepper, ids, self.new_tokens, default_rule())
                    for ids in self.points
                ]
            except Exception as exc:
                self._fail(cand, f"{cand.name} failed at timing: {type(exc).__name__}: {exc}")
                continue
            out.extend(
                self._judged(_result(cand, ids, self.new_tokens, phases, accuracy))
                for ids, phases in zip(self.points, timed, strict=True)
            )
        return out + self.failures

    def _fail(self, cand: Candidate, failure: str) -> None:
        self.failures.extend(failed(cand, ids, self.new_tokens, failure) for ids in self.points)

    def _judged(self, r: GenerationResult) -> GenerationResult:
        ok = r.top1 >= self.policy.min_top1 and r.rms_rel <= self.policy.max_rms_rel
        return replace(r, accurate=ok)


def _compiled(cand: Candidate) -> set[str]:
    return {cand.prefill_kind, cand.decode_kind} - {"eager"}


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
        accuracy[0],
        accuracy[1],
        accuracy[2],
    )


def failed(cand: Candidate, ids: torch.Tensor, new: int, failure: str) -> GenerationResult:
    """A failed candidate's result at one point: infinite latencies, no accuracy."""
    inf = float("inf")
    return replace(
        _result(cand, ids, new, (inf, inf), (0.0, inf, None)), accurate=False, failure=failure
    )
