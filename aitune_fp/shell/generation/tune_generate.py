"""``tune_generate``: measure every generation candidate, check it, pick by a strategy.

Rules: prompts are token-id tensors ([L] or [B, L]) or strings with ``tokenizer``; each
prompt length is measured at every batch size (rows repeated to the batch). The strategy
judges candidates at the primary point (first batch size, first prompt); every point is in
the record. Accuracy is teacher-forced on held-out prompts against eager fp32 (top-1 >=
``min_top1``, RMS relative error <= ``max_rms_rel``); a candidate that raises is recorded
as a failure naming its stage and reason.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import torch

from aitune_fp.core.generation import GenerationResult, GenerationStrategy, max_tokens_per_s, pick
from aitune_fp.effects.generation.teacher import TeacherReference, reference, teacher_forced
from aitune_fp.effects.generation.timing import default_rule, time_hf, time_stepper
from aitune_fp.shell.generation.candidates import BASELINE, BY_NAME, CANDIDATES, Candidate, build
from aitune_fp.shell.generation.tuned_generator import TunedGenerator


def _as_ids(prompt: Any, tokenizer: Any) -> torch.Tensor:
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


def _points(prompts: Sequence[torch.Tensor], batch_sizes: Sequence[int]) -> list[torch.Tensor]:
    return [p.repeat(b, 1) for b in batch_sizes for p in prompts]


def _measure(
    model: Any, cand: Candidate, points: list[torch.Tensor], new: int, ref: TeacherReference
) -> list[GenerationResult]:
    stage = "build"
    try:
        stepper = build(model, cand)
        stage = "teacher-forced check"
        top1, rms, diverge = teacher_forced(stepper, ref)
        stage = "timing"
        timed = [time_stepper(stepper, ids, new, default_rule()) for ids in points]
    except Exception as exc:
        failure = f"{cand.name} failed at {stage}: {type(exc).__name__}: {exc}"
        return [_failed(cand, ids, new, failure) for ids in points]
    return [
        GenerationResult(
            cand.name,
            cand.prefill_backend,
            cand.decode_backend,
            ids.shape[0],
            ids.shape[1],
            new,
            ttft,
            itl,
            top1,
            rms,
            diverge,
        )
        for ids, (ttft, itl) in zip(points, timed, strict=True)
    ]


def _failed(cand: Candidate, ids: torch.Tensor, new: int, failure: str) -> GenerationResult:
    return GenerationResult(
        cand.name,
        cand.prefill_backend,
        cand.decode_backend,
        ids.shape[0],
        ids.shape[1],
        new,
        float("inf"),
        float("inf"),
        0.0,
        float("inf"),
        None,
        False,
        failure,
    )


def _judged(r: GenerationResult, min_top1: float, max_rms_rel: float) -> GenerationResult:
    ok = r.top1 >= min_top1 and r.rms_rel <= max_rms_rel
    return GenerationResult(**{**{f: getattr(r, f) for f in r.__slots__}, "accurate": ok})


def tune_generate(
    model: Any,
    prompts: Sequence[Any],
    *,
    new_tokens: int = 64,
    batch_sizes: Sequence[int] = (1,),
    strategy: GenerationStrategy = max_tokens_per_s,
    candidates: Sequence[str] | None = None,
    tokenizer: Any = None,
    min_top1: float = 0.99,
    max_rms_rel: float = 0.1,
) -> TunedGenerator:
    """Tune ``model``'s generation (see the module rules); returns a ``TunedGenerator``."""
    start = time.perf_counter()
    model.eval()
    ids = [_as_ids(p, tokenizer) for p in prompts]
    points = _points(ids, batch_sizes)
    ref_stepper = build(model, BY_NAME["eager_static"])
    ref = reference(
        model, ref_stepper, _held_out(model, [i.shape[1] for i in ids]), min(new_tokens, 16)
    )
    results = [
        GenerationResult(
            BASELINE,
            "eager-dynamic",
            "eager-dynamic",
            p.shape[0],
            p.shape[1],
            new_tokens,
            *time_hf(model, p, new_tokens, default_rule()),
        )
        for p in points
    ]
    chosen = [BY_NAME[n] for n in candidates] if candidates is not None else list(CANDIDATES)
    for cand in chosen:
        measured = _measure(model, cand, points, new_tokens, ref)
        results.extend(_judged(r, min_top1, max_rms_rel) for r in measured)
    primary = [
        r for r in results if r.batch == points[0].shape[0] and r.prompt_len == points[0].shape[1]
    ]
    choice = pick(strategy, primary, BASELINE)
    return TunedGenerator(model, choice, tuple(results), time.perf_counter() - start)
