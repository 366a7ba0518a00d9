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
The pick is made by the one fold (:func:`aitune_fp.core.generation.choose`) over the results at
the primary point. The result is an ``IOResult`` as ``tune_module``'s: a bad request (no
``generate``, no vocabulary, no prompt, a prompt beyond the model's positions, an unknown
candidate: :mod:`aitune_fp.core.generation.request`) is an ``IOFailure`` of a ``TuneError``
whose message is one line naming the problem, before anything is built. Device: prompts
and held-out ids go to the model's device; a candidate that may not run there
(:func:`aitune_fp.effects.generation.devices.refusal`: on CUDA, every one not yet proven on
a GPU) is recorded as refused with its reason and never built, and without a candidate
left no reference is computed (HF ``generate`` is still measured).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import torch
from returns.io import IOFailure, IOResult, IOSuccess

from aitune_fp.core.generation import GenerationResult, choose, max_tokens_per_s
from aitune_fp.core.generation.request import GenerationRequest, refusal
from aitune_fp.core.records import TuneError
from aitune_fp.core.strategy import Strategy
from aitune_fp.effects.generation import devices
from aitune_fp.effects.generation.teacher import TeacherReference, reference
from aitune_fp.effects.generation.timing import hf_rule, time_hf
from aitune_fp.shell.generation.candidates import BASELINE, BY_NAME, CANDIDATES, Candidate, Steppers
from aitune_fp.shell.generation.measure import (
    Measuring,
    Policy,
    Prepared,
    prepare,
    refuse,
    start_ahead,
    timed,
)
from aitune_fp.shell.generation.tuned_generator import TunedGenerator


def prompt_ids(prompt: Any, tokenizer: Any) -> torch.Tensor:
    """One prompt as token ids [1, L]: a string is tokenized by ``tokenizer``, a tensor's
    first row is kept ([L] or [B, L])."""
    if isinstance(prompt, str):
        if tokenizer is None:
            raise ValueError("string prompts need tokenizer=")
        prompt = tokenizer(prompt, return_tensors="pt")["input_ids"]
    ids = torch.as_tensor(prompt)
    return ids[:1] if ids.dim() == 2 else ids.unsqueeze(0)


def _held_out(model: Any, lengths: Sequence[int]) -> torch.Tensor:
    gen = torch.Generator().manual_seed(1234)
    vocab = int(model.config.vocab_size)
    return torch.randint(0, vocab, (2, max(min(lengths), 4)), generator=gen)


HF_TOKENS = 16
"""Tokens per timed HF ``generate`` run: its TTFT and median inter-token gap (at the context
after the prompt, as every candidate's) need no more, and the tune's wall stays bounded."""


def _points(prompts: Sequence[torch.Tensor], batch_sizes: Sequence[int]) -> list[torch.Tensor]:
    return [p.repeat(b, 1) for b in batch_sizes for p in prompts]


def _request(
    model: Any, ids: Sequence[torch.Tensor], new_tokens: int, batch_sizes: Sequence[int]
) -> GenerationRequest:
    lm_config = getattr(model, "config", None)
    positions = getattr(lm_config, "max_position_embeddings", None)
    return GenerationRequest(
        has_generate=callable(getattr(model, "generate", None)),
        vocab_size=getattr(lm_config, "vocab_size", None),
        positions=positions if isinstance(positions, int) else None,
        prompt_lengths=tuple(int(i.shape[1]) for i in ids),
        new_tokens=new_tokens,
        batch_sizes=tuple(batch_sizes),
    )


def _prompts(prompts: Sequence[Any], tokenizer: Any) -> IOResult[list[torch.Tensor], TuneError]:
    try:
        return IOSuccess([prompt_ids(p, tokenizer) for p in prompts])
    except (ValueError, TypeError, RuntimeError) as error:
        return IOFailure(TuneError(f"a prompt cannot be read: {error}"))


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
) -> IOResult[TunedGenerator, TuneError]:
    """Tune ``model``'s generation (see the module rules): the ``TunedGenerator``, or the
    ``TuneError`` saying why not. ``progress``, when given, receives one line per candidate
    as it is built and checked, and one per candidate timed."""
    start = time.perf_counter()
    policy = Policy(min_top1, max_rms_rel, wall_budget_s, build_budget_s)

    def checked(ids: list[torch.Tensor]) -> IOResult[TunedGenerator, TuneError]:
        request = _request(model, ids, new_tokens, batch_sizes)
        asked = replace(request, candidates=tuple(candidates or ()))
        problem = refusal(asked, tuple(BY_NAME))
        if problem is not None:
            return IOFailure(TuneError(problem))
        chosen = [BY_NAME[n] for n in candidates] if candidates is not None else list(CANDIDATES)
        said = progress if progress is not None else _quiet
        run = _Tune(model, ids, new_tokens, tuple(batch_sizes), policy, said)
        return IOSuccess(run.tuned(strategy, chosen, start))

    return _prompts(prompts, tokenizer).bind(checked)


@dataclass(frozen=True, slots=True)
class _Tune:
    """One tune's inputs: the model, its prompts as ids, and the policy."""

    model: torch.nn.Module
    ids: list[torch.Tensor]
    new_tokens: int
    batch_sizes: tuple[int, ...]
    policy: Policy
    progress: Callable[[str], None]

    def _reference(self, steppers: Steppers, device: torch.device) -> TeacherReference:
        """The eager fp32 teacher reference on held-out ids on the model's device."""
        held_out = _held_out(self.model, [i.shape[1] for i in self.ids])
        eager = steppers.get(BY_NAME["eager_static"])
        return reference(
            self.model, eager, devices.to_device(held_out, device), min(self.new_tokens, 16)
        )

    def tuned(self, strategy: Strategy, chosen: list[Candidate], start: float) -> TunedGenerator:
        """Measure every chosen candidate and the baseline; the fold picks."""
        model, new_tokens = self.model, self.new_tokens
        model.eval()
        device = devices.model_device(model)
        points = tuple(devices.to_device(p, device) for p in _points(self.ids, self.batch_sizes))
        refused = devices.refusals([c.name for c in chosen], device)
        kept = [c for c in chosen if c.name not in refused]
        steppers = Steppers(model)
        ref = self._reference(steppers, device) if kept else None
        m = Measuring(points, new_tokens, ref, self.policy, start, steppers)
        state = refuse(m, start_ahead(m, kept), [c for c in chosen if c.name in refused], refused)
        for cand in chosen:
            if cand.name not in refused:
                state = prepare(m, state, cand)
            self.progress(_prepared_line(state, cand.name))
        results = [_hf_result(model, p, new_tokens) for p in points]
        results.extend(timed(m, state))
        for line in _timed_lines(results, len(chosen) + 1, points[0].shape):
            self.progress(line)
        first = points[0].shape
        primary = [r for r in results if (r.batch, r.prompt_len) == (first[0], first[1])]
        choice = choose(strategy, primary, BASELINE)
        wall = time.perf_counter() - start
        return TunedGenerator(model, choice, tuple(results), wall, steppers=steppers)


def _quiet(_line: str) -> None:
    """No progress lines."""


def _prepared_line(state: Prepared, name: str) -> str:
    """One line on ``name`` after it was built and checked (or skipped, or failed)."""
    failed = next((r.failure for r in state.failures if r.name == name), None)
    if failed is not None:
        return f"{name}: {failed}"
    ready = state.checked[name]
    verdict = "accurate" if ready.accurate else "refused by the accuracy policy"
    return f"{name}: built, teacher-forced top-1 {ready.top1:.3f} ({verdict})"


def _timed_lines(results: Sequence[GenerationResult], count: int, first: torch.Size) -> list[str]:
    """One line per timed candidate at the primary point: TTFT, ITL, tokens/s."""
    at = [r for r in results if (r.batch, r.prompt_len) == (first[0], first[1])]
    return [
        f"{r.name}: TTFT {r.ttft_ms:.2f} ms, ITL {r.itl_ms:.2f} ms, {r.tokens_per_s:.1f} tok/s "
        f"(b{r.batch} L{r.prompt_len})"
        for r in at[:count]
        if r.failure is None
    ]


def _hf_result(model: Any, p: torch.Tensor, new_tokens: int) -> GenerationResult:
    ttft, itl = time_hf(model, p, min(new_tokens, HF_TOKENS), hf_rule())
    batch, length = p.shape[0], p.shape[1]
    return GenerationResult(
        BASELINE, "eager-dynamic", "eager-dynamic", batch, length, new_tokens, ttft, itl
    )
