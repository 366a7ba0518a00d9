"""``tune_generate``: measure every generation candidate, check it, pick by a strategy.

Rules: prompts are token-id tensors ([L] or [B, L]) or strings with ``tokenizer``; each
prompt length is measured at every batch size (rows repeated to the batch). The strategy
judges candidates at the primary point (first batch size, first prompt); every point is in
the record. Accuracy is teacher-forced on held-out prompts against eager fp32 (top-1 >=
``min_top1``, RMS relative error <= ``max_rms_rel``); a candidate that raises is recorded
as a failure naming its stage and reason. Time: HF ``generate`` is timed under ``hf_rule``
(whole runs), every candidate under ``default_rule``; compiling candidates run within
``wall_budget_s`` for the whole tune and ``build_budget_s`` per build, and are skipped with
a recorded reason as :mod:`aitune_fp.shell.generation.measure` says. Compiling candidates
come after the eager ones, AOTInductor first (one build serves both of its candidates).
The tune is a session (:mod:`aitune_fp.core.session`) over the candidates with HF ``generate``
as its baseline, carried out by :mod:`aitune_fp.shell.generation.session_answer`: the one
fold picks over the results at the primary point, then (``verify_seconds`` > 0) paired
interleaved rounds of the pick, its runner-up and HF ``generate`` confirm or move it by the
evidence rules of every tune; the pick's figures are then the verification's medians, and
the generator carries the session's run record (:func:`~aitune_fp.core.record.derive.
record_of`: events, plan, verification; ``replay`` reads it). The result is an
``IOResult`` as ``tune_module``'s: a bad request (no ``generate``, no vocabulary, no prompt,
a prompt beyond the model's positions, an unknown candidate:
:mod:`aitune_fp.core.generation.request`) is an ``IOFailure`` of a ``TuneError`` whose
message is one line naming the problem, before anything is built. Device: prompts and
held-out ids go to the model's device; a candidate that may not run there
(:func:`aitune_fp.effects.generation.devices.refusal`: on CUDA, every one not yet proven on
a GPU) is recorded as refused with its reason and never built, and without a candidate left
no reference is computed (HF ``generate`` is still measured); by default a tune lists only
the candidates offered on that device (:func:`~aitune_fp.effects.generation.devices.offered`:
no CUDA-graph candidate on a CPU model).

Longer than 260 lines: the request check, the full tune and the re-check share the one
:class:`_Tune` value that carries a tune's inputs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch
from pyrsistent import freeze, pmap
from returns.io import IOFailure, IOResult, IOSuccess

from aitune_fp.core.generation import max_tokens_per_s
from aitune_fp.core.generation.accuracy_rule import held_out_rows
from aitune_fp.core.generation.build_policy import memory_budget
from aitune_fp.core.generation.choose import pick_of
from aitune_fp.core.generation.request import refusal
from aitune_fp.core.record.decisions import FULL, cached_line, retuned_line
from aitune_fp.core.record.derive import RecordEnv, record_of
from aitune_fp.core.record.hit import hit_record
from aitune_fp.core.record.provenance import Provenance
from aitune_fp.core.records import TuneError
from aitune_fp.core.session import SessionPlan, run
from aitune_fp.core.session.events import Profiled
from aitune_fp.core.session.program import Stored
from aitune_fp.core.session.recorded import recorded_plan
from aitune_fp.core.strategy import Strategy
from aitune_fp.core.verification.verification_records import Verification
from aitune_fp.effects.generation import devices
from aitune_fp.effects.generation.teacher import TeacherReference, reference
from aitune_fp.effects.machine.environment import environment_fingerprint
from aitune_fp.shell.generation.candidates import (
    BASELINE,
    BY_NAME,
    CANDIDATES,
    Candidate,
    Steppers,
    candidate,
    named,
    refusals,
)
from aitune_fp.shell.generation.decode_limit import with_decode_bound
from aitune_fp.shell.generation.holding import fp32_bytes, resident_now
from aitune_fp.shell.generation.measure import Measuring, Policy
from aitune_fp.shell.generation.prompts import (
    held_out,
    points,
    prompts_of,
    request_of,
)
from aitune_fp.shell.generation.session_answer import GenerationAnswer, GenerationAsk, all_results
from aitune_fp.shell.generation.stored_decision import (
    RECHECK_TOKENS,
    SHORT_VERIFY,
    Asking,
    decided,
)
from aitune_fp.shell.generation.tuned_generator import TunedGenerator
from aitune_fp.shell.sealed import LoadError
from aitune_fp.shell.wall_clock import Stopwatch

HELD_OUT_NEW = 64
"""Teacher-forced positions per held-out row (at most the tune's new tokens): long rows
make the positions a bound needs from few prompts, whose prefill is the check's cost on a
large model."""
VERIFY_SECONDS = 3.0
"""The verification's default budget (seconds of paired rounds; it may extend for a
leaning verdict, as every tune's)."""


def tune_generate(
    model: Any,
    prompts: Sequence[Any],
    *,
    new_tokens: int = 64,
    batch_sizes: Sequence[int] = (1,),
    strategy: Strategy = max_tokens_per_s,
    candidates: Sequence[str] | None = None,
    tokenizer: Any = None,
    min_top1: float = 0.99,
    max_rms_rel: float = 0.1,
    wall_budget_s: float = 150.0,
    build_budget_s: float = 120.0,
    progress: Callable[[str], None] | None = None,
    verify_seconds: float = VERIFY_SECONDS,
    cache_dir: str | Path | None = None,
    fresh: bool = False,
) -> IOResult[TunedGenerator, TuneError]:
    """Tune ``model``'s generation (see the module rules): the ``TunedGenerator``, or the
    ``TuneError`` saying why not. ``progress``, when given, receives one line per candidate
    as it is built and checked, one per candidate timed and the verification's lines;
    ``verify_seconds`` (0: none) is the verification's budget; with ``cache_dir`` an
    unchanged re-tune re-verifies the stored pick (``fresh``: tune in full;
    :mod:`aitune_fp.shell.generation.stored_decision`)."""
    start, clock = time.perf_counter(), Stopwatch()  # the record's wall account
    policy = Policy(min_top1, max_rms_rel, wall_budget_s, build_budget_s)

    def checked(ids: list[torch.Tensor]) -> IOResult[TunedGenerator, TuneError]:
        request = request_of(model, ids, new_tokens, batch_sizes)
        asked = replace(request, candidates=tuple(candidates or ()))
        twins = tuple(n for n in candidates or () if n not in BY_NAME and named(n) is not None)
        problem = refusal(asked, (*BY_NAME, *twins))
        if problem is not None:
            return IOFailure(TuneError(problem))
        device = devices.model_device(model)
        default = devices.offered((c.name for c in CANDIDATES), device)
        chosen = [candidate(n) for n in (candidates if candidates is not None else default)]
        said = progress if progress is not None else _quiet
        tune = _Tune(
            model, ids, new_tokens, tuple(batch_sizes), policy, said, verify_seconds, clock
        )
        names = tuple(c.name for c in chosen)
        asking = Asking(model, ids, new_tokens, tuple(batch_sizes), strategy, names, policy, device)
        folder = Path(cache_dir) if cache_dir is not None else None
        return IOSuccess(
            decided(
                asking,
                folder,
                fresh,
                lambda: tune.tuned(strategy, chosen, start),
                lambda stored, saved: tune.rechecked(stored, saved, chosen),
            )
        )

    return prompts_of(prompts, tokenizer).bind(checked)


@dataclass(frozen=True, slots=True)
class _Tune:
    """One tune's inputs: the model, its prompts as ids, and the policy."""

    model: torch.nn.Module
    ids: list[torch.Tensor]
    new_tokens: int
    batch_sizes: tuple[int, ...]
    policy: Policy
    progress: Callable[[str], None]
    verify_seconds: float = 0.0
    clock: Stopwatch = field(default_factory=Stopwatch)

    def _reference(
        self, steppers: Steppers, device: torch.device, reduced: bool
    ) -> TeacherReference:
        """The eager fp32 teacher reference on held-out ids on the model's device (enough
        positions for a bound when a ``reduced``-precision candidate is judged)."""
        new = min(self.new_tokens, HELD_OUT_NEW)
        rows = held_out_rows(new, reduced)
        ids = held_out(self.model, [i.shape[1] for i in self.ids], rows)
        eager = steppers.get(BY_NAME["eager_static"])
        return reference(self.model, eager, devices.to_device(ids, device), new)

    def _points(self) -> tuple[torch.Tensor, ...]:
        """Every (batch size, prompt) point as ids on the model's device, the primary first."""
        device = devices.model_device(self.model)
        return tuple(devices.to_device(p, device) for p in points(self.ids, self.batch_sizes))

    def tuned(self, strategy: Strategy, chosen: list[Candidate], start: float) -> TunedGenerator:
        """The session over every chosen candidate and the baseline, carried out here."""
        model = self.model
        model.eval()
        in_use = resident_now()
        device = devices.model_device(model)
        refused = refusals(chosen, device)
        steppers = Steppers(model)
        kept = [c for c in chosen if c.name not in refused]
        reduced = any(c.precision != "float32" for c in kept)
        ref = self._reference(steppers, device, reduced) if kept else None
        budget = memory_budget(fp32_bytes(model), in_use)
        m = Measuring(self._points(), self.new_tokens, ref, self.policy, start, steppers, budget)
        asked = GenerationAsk(tuple(chosen), refused, strategy.metric.label, self.progress)
        self.clock.lap("setup")
        answer = GenerationAnswer(model, m, asked, lap=self.clock.lap)
        names = tuple(c.name for c in chosen)
        plan = SessionPlan(
            strategy, names, BASELINE, early_stop=False, verify_seconds=self.verify_seconds or None
        )
        session, done = run(plan, answer)
        if session.verification is None:
            self.clock.lap("candidates")
        results = all_results(answer, names)
        choice = answer.verified_pick(pick_of(strategy, done.selection, results, BASELINE))
        steppers.keep_only(choice.result.name)
        whole = record_of(session, self._env(device))
        record = with_decode_bound(whole, model, choice.result, steppers, self.progress)
        wall = time.perf_counter() - start
        return TunedGenerator(model, choice, results, wall, steppers=steppers, run=record)

    def rechecked(
        self, stored: Stored, saved: Path, chosen: list[Candidate]
    ) -> TunedGenerator | str:
        """The stored decision re-checked (its session replayed from its log, only the
        verification timed again, for :data:`~aitune_fp.shell.generation.stored_decision.
        SHORT_VERIFY` seconds): the generator when it stands, else the full tune's line."""
        start = time.perf_counter()
        try:
            loaded = TunedGenerator.load(saved, module=self.model)
        except (LoadError, OSError, ValueError) as error:
            return f"{FULL}: the stored generator cannot be loaded ({error})"
        m = Measuring(self._points(), self.new_tokens, None, self.policy, start, loaded.steppers)
        plan = replace(recorded_plan(stored.record), verify_seconds=SHORT_VERIFY)
        asked = GenerationAsk(tuple(chosen), {}, plan.strategy.metric.label, self.progress)
        logged = {e.name: e for e in stored.record.events if isinstance(e, Profiled)}
        self.clock.lap("setup")
        answer = GenerationAnswer(
            self.model, m, asked, recorded=logged, lap=self.clock.lap, tokens=RECHECK_TOKENS
        )
        session, done = run(plan, answer)
        picked = done.selection.map(lambda s: s.backend).value_or("")
        if picked != stored.pick:
            return retuned_line(stored.pick, picked)
        line = cached_line(stored.where, stored.pick, _rival(session.verification))
        short = record_of(session, self._env(devices.model_device(self.model), line))
        choice = answer.verified_pick(loaded.choice)
        wall = time.perf_counter() - start
        hit = hit_record(stored.record, short)
        return TunedGenerator(
            self.model, choice, loaded.results, wall, loaded.fresh, loaded.steppers, hit
        )

    def _env(self, device: torch.device, line: str | None = None) -> RecordEnv:
        """What the record needs beyond the session: the model, device, environment, inputs."""
        spec = {
            "prompt_lengths": [int(i.shape[1]) for i in self.ids],
            "batch_sizes": list(self.batch_sizes),
            "new_tokens": self.new_tokens,
        }
        environment, said = pmap(environment_fingerprint(str(device))), Provenance(decision=line)
        return RecordEnv(
            type(self.model).__name__,
            str(device),
            environment,
            freeze(spec),
            wall=self.clock.account(),
            provenance=said,
        )


def _rival(v: Verification | None) -> str | None:
    """The candidate a re-check verified its pick against (``None``: only the baseline)."""
    found = [c.challenger for c in (v.comparisons if v is not None else ())]
    return next((name for name in found if name != BASELINE), None)


def _quiet(_line: str) -> None:
    """No progress lines."""
