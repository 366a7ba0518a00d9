"""The generation session's interpreter: it carries out what the pure session decides.

Rules: a generation tune is a :class:`~aitune_fp.core.session.SessionPlan` over the
candidates' names with HF ``generate`` as the baseline, driven by the one loop
(:func:`~aitune_fp.core.session.run.run`); this interpreter only does:
- the baseline's ``Build`` first builds and checks every candidate teacher-forced
  (:func:`~aitune_fp.shell.generation.measure.prepare`, the AOTInductor compile started
  ahead), so that nothing of the tune runs while anything is timed, then times HF
  ``generate`` at every point; each candidate's ``Build`` times its ready stepper at every
  point (or answers its build, check or timing failure); every answer is a ``Profiled``
  whose profile holds all its points (the primary first) and whose facts hold each
  phase's backend, the precision and the teacher-forced figures;
- a ``Verify`` times its entries (the pick, its runner-up, HF ``generate``) in interleaved
  rounds of one greedy run each (:mod:`aitune_fp.effects.generation.paired`) at the primary
  point, sampled as the strategy judges (:func:`~aitune_fp.core.generation.verify.
  round_sample`), until the command's judge stops; each participant first runs
  :data:`WARM_RUNS` times untimed, off the budget (a first call in a process pays for its
  set-up);
- a re-check of a stored decision (``recorded``) answers each ``Build`` by the stored
  run's ``Profiled`` of that backend (nothing is built or timed again) and times only the
  verification; a participant without a ready stepper is built then, unless its build
  compiles (it then leaves the verification, saying so);
- the session's notes on the verification are progress lines; ``lap`` closes the wall
  account's stages (``build_and_check`` after the builds, ``candidates`` before the
  verification, ``verification`` after it); nothing here decides.

Longer than 260 lines: the interpreter answers each session command (builds, timings, the
verification and its participants) over one tune's state.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import torch
from pyrsistent import pmap
from returns.result import Success

from aitune_fp.core.generation import GenerationResult
from aitune_fp.core.generation.choose import GenerationPick, accuracy_text, candidate_of
from aitune_fp.core.generation.run_record import outcome_config, profile_of, validation_of
from aitune_fp.core.generation.verify import round_sample, verified_result, verify_tokens
from aitune_fp.core.report.notes import render
from aitune_fp.core.session import Command, Event, Say
from aitune_fp.core.session.commands import Build, Verify
from aitune_fp.core.session.events import Profiled
from aitune_fp.core.session.facts import BuildFacts
from aitune_fp.core.session.notes import VerificationPlanned, VerificationVerdict
from aitune_fp.effects.generation.loop import Stepper
from aitune_fp.effects.generation.paired import run_once
from aitune_fp.effects.generation.timing import hf_rule, time_hf
from aitune_fp.effects.measure.interleave import interleave
from aitune_fp.shell.drive import as_timed
from aitune_fp.shell.generation.candidates import BASELINE, Candidate
from aitune_fp.shell.generation.holding import memory_skip, stepper_of
from aitune_fp.shell.generation.measure import (
    Measuring,
    Preparation,
    prepare,
    refuse,
    start_ahead,
)
from aitune_fp.shell.generation.measure import timed_one as time_ready

WARM_RUNS = 2
"""Untimed runs of each verification participant before its rounds (off their budget)."""
HF_TOKENS = 16
"""Tokens per timed HF ``generate`` run: its TTFT and median inter-token gap (at the context
after the prompt, as every candidate's) need no more, and the tune's wall stays bounded."""


@dataclass(frozen=True, slots=True)
class GenerationAsk:
    """What the tune asked: its candidates, those refused on this device (and why), the
    strategy's metric name and where progress lines go."""

    chosen: tuple[Candidate, ...]
    refused: dict[str, str]
    metric: str
    progress: Callable[[str], None]


@dataclass
class GenerationAnswer:
    """The interpreter's state: what was built and checked, each backend's results (every
    point) and each verification participant's runs (TTFT, inter-token ms); ``tokens``: the
    new tokens of a verification run when not the tune's (a re-check's shorter runs)."""

    model: torch.nn.Module
    m: Measuring
    asked: GenerationAsk
    prepared: Preparation = field(default_factory=Preparation)
    results: dict[str, list[GenerationResult]] = field(default_factory=dict)
    verified: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    recorded: dict[str, Profiled] = field(default_factory=dict)
    lap: Callable[[str], None] = field(default=lambda _stage: None)
    tokens: int | None = None

    def __call__(self, command: Command) -> Event | None:
        """The event answering ``command`` (``None`` for a command that measures nothing)."""
        match command:
            case Build(name=name) if name in self.recorded:
                return self.recorded[name]
            case Build(baseline=True):
                self._prepare_all()
                self.lap("build_and_check")
                return self._profiled(BASELINE, self._hf_results(), 0.0)
            case Build(name=name):
                return self._candidate(name)
            case Verify():
                return self._verify(command)
            case Say(note=VerificationPlanned() | VerificationVerdict() as note):
                self.asked.progress(render(note))
        return None

    def verified_pick(self, choice: GenerationPick) -> GenerationPick:
        """``choice`` with its figures the medians of its verification runs (unchanged when
        it took no part)."""
        runs = self.verified.get(choice.result.name, [])
        return replace(choice, result=verified_result(choice.result, runs))

    def _prepare_all(self) -> None:
        """Build and check every candidate not refused here (one progress line each)."""
        asked, m = self.asked, self.m
        kept = [c for c in asked.chosen if c.name not in asked.refused]
        gone = [c for c in asked.chosen if c.name in asked.refused]
        state = refuse(m, start_ahead(m, kept), gone, asked.refused)
        for cand in asked.chosen:
            if cand.name not in asked.refused:
                state = prepare(m, state, cand)
            asked.progress(prepared_line(state, cand.name))
        self.prepared = state

    def _hf_results(self) -> list[GenerationResult]:
        """HF ``generate`` timed at every point (the baseline's results)."""
        return [hf_result(self.model, p, self.m.new_tokens) for p in self.m.points]

    def _candidate(self, name: str) -> Profiled:
        """``name``'s ready stepper timed at every point, or its failure."""
        start = time.perf_counter()
        ready = next((r for r in self.prepared.ready if r.candidate.name == name), None)
        rows = time_ready(self.m, ready) if ready is not None else None
        if isinstance(rows, str) or rows is None:
            cand = next(c for c in self.asked.chosen if c.name == name)
            failed = rows if isinstance(rows, str) else None
            rows = _failure_rows(self.m, self.prepared, cand, failed)
        return self._profiled(name, rows, time.perf_counter() - start)

    def _profiled(self, name: str, rows: list[GenerationResult], seconds: float) -> Profiled:
        """The session's answer for ``name``'s rows, kept for the tune's results."""
        self.results[name] = rows
        made = candidate_of(rows[0])
        answer = Success(profile_of(rows)) if isinstance(made, Success) else made
        facts = BuildFacts(
            "generation",
            name,
            outcome_config(rows[0]),
            pmap({"profile": seconds}),
            validation_of(rows[0]),
        )
        timed = f"{name}: {timed_line(rows[0])}" if rows[0].failure is None else None
        if timed is not None:
            self.asked.progress(timed)
        return Profiled(name, answer, isinstance(made, Success), seconds, facts)

    def _verify(self, command: Verify) -> Event:
        """The command's entries, warmed (off the budget), then timed in interleaved greedy
        runs at the primary point until the command's judge stops."""
        self.lap("candidates")
        ids, tokens = self.m.points[0], self.tokens or verify_tokens(self.m.new_tokens)
        who, left = self._participants(command)
        who = {k: p for k, p in who.items() if self._warmed(k, p, ids, tokens, left)}
        runs: dict[str, list[tuple[float, float]]] = {key: [] for key in who}

        def call(key: str, _round: int) -> float:
            ttft, itl = run_once(who[key], self.model, ids, tokens)
            runs[key].append((ttft, itl))
            return round_sample(self.asked.metric, ttft, itl, self.m.new_tokens)

        timed = interleave(list(who), lambda _key: True, call, command.judge, command.plan)
        self.lap("verification")
        self.verified.update(runs)
        return as_timed("verify", timed, left)

    def _participants(self, command: Verify) -> tuple[dict[str, Stepper | None], dict[str, str]]:
        """Each entry's stepper by key, and why each that cannot take part cannot."""
        who: dict[str, Stepper | None] = {}
        left: dict[str, str] = {}
        for key, backend, _ in command.entries:
            found = self._participant(backend)
            if isinstance(found, str):
                left[backend] = found
            else:
                who[key] = found
        return who, left

    def _warmed(
        self, key: str, who: Stepper | None, ids: torch.Tensor, tokens: int, left: dict[str, str]
    ) -> bool:
        """Two untimed runs of ``who`` (a first call in a process pays its set-up); a run
        that raises keeps it out, its reason in ``left``."""
        try:
            for _ in range(WARM_RUNS):
                run_once(who, self.model, ids, tokens)
        except Exception as error:  # a user's model or a compiler: it stays out
            left[key] = f"{type(error).__name__}: {error}"
            return False
        return True

    def _participant(self, backend: str) -> Stepper | str | None:
        """The stepper timed for ``backend`` (``None``: HF ``generate`` itself; a string:
        why it cannot take part)."""
        if backend == BASELINE:
            return None
        ready = next((r for r in self.prepared.ready if r.candidate.name == backend), None)
        if ready is not None:
            kept = ready.stepper is not None or backend in self.m.steppers.built
            m = self.m
            short = None if kept else memory_skip(m.steppers, ready.candidate, m.memory_budget)
            if short is not None:
                return short
            return stepper_of(m.steppers, ready.candidate, ready.stepper, m.policy.build_budget_s)
        cand = next(c for c in self.asked.chosen if c.name == backend)
        if cand.costly and cand.name not in self.m.steppers.built:
            return f"{backend} compiles: a re-check does not build it again"
        return self.m.steppers.get(cand, self.m.policy.build_budget_s)


def _failure_rows(
    m: Measuring, state: Preparation, cand: Candidate, failed: str | None
) -> list[GenerationResult]:
    """The failed candidate's rows: its timing failure, else its build's or refusal's."""
    if failed is not None:
        from aitune_fp.shell.generation.measure import failed as failed_at

        return [failed_at(cand, ids, m.new_tokens, failed) for ids in m.points]
    return [r for r in state.failures if r.name == cand.name]


def hf_result(model: Any, p: torch.Tensor, new_tokens: int) -> GenerationResult:
    """HF ``generate`` timed at one point (the baseline's row there)."""
    ttft, itl = time_hf(model, p, min(new_tokens, HF_TOKENS), hf_rule())
    batch, length = p.shape[0], p.shape[1]
    return GenerationResult(
        BASELINE, "eager-dynamic", "eager-dynamic", batch, length, new_tokens, ttft, itl
    )


def prepared_line(state: Preparation, name: str) -> str:
    """One line on ``name`` after it was built and checked (or skipped, or failed)."""
    failed = next((r.failure for r in state.failures if r.name == name), None)
    if failed is not None:
        return f"{name}: {failed}"
    ready = state.checked[name]
    verdict = "accurate" if ready.accurate else "refused by the accuracy policy"
    return f"{name}: built, {accuracy_text(ready)} ({verdict})"


def timed_line(r: GenerationResult) -> str:
    """A timed row's figures: TTFT, ITL, tokens/s at its point."""
    return (
        f"TTFT {r.ttft_ms:.2f} ms, ITL {r.itl_ms:.2f} ms, {r.tokens_per_s:.1f} tok/s "
        f"(b{r.batch} L{r.prompt_len})"
    )


def all_results(answer: GenerationAnswer, order: Sequence[str]) -> tuple[GenerationResult, ...]:
    """Every measured row, the baseline's first, then the candidates in ``order``."""
    names = [BASELINE, *order]
    return tuple(r for n in names for r in answer.results.get(n, []))


__all__ = ["GenerationAnswer", "GenerationAsk", "all_results", "hf_result"]
