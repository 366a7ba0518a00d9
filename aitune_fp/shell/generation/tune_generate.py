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
Device: prompts and held-out ids go to the model's device; a candidate that may not run
there (:func:`aitune_fp.effects.generation.devices.refusal`: on CUDA, every one not yet
proven on a GPU) is recorded as refused with its reason and never built, and without a
candidate left no reference is computed (HF ``generate`` is still measured).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import torch

from aitune_fp.core.generation import GenerationResult, GenerationStrategy, max_tokens_per_s, pick
from aitune_fp.effects.generation import devices
from aitune_fp.effects.generation.teacher import TeacherReference, reference
from aitune_fp.effects.generation.timing import hf_rule, time_hf
from aitune_fp.shell.generation.candidates import BASELINE, BY_NAME, CANDIDATES, build
from aitune_fp.shell.generation.measure import CandidateRun, Policy
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


def _reference(
    model: Any, ids: Sequence[torch.Tensor], new_tokens: int, device: torch.device
) -> TeacherReference:
    """The eager fp32 teacher reference on held-out ids on the model's device."""
    held_out = devices.to_device(_held_out(model, [i.shape[1] for i in ids]), device)
    return reference(model, build(model, BY_NAME["eager_static"]), held_out, min(new_tokens, 16))


HF_TOKENS = 16
"""Tokens per timed HF ``generate`` run: its TTFT and median inter-token gap (at the context
after the prompt, as every candidate's) need no more, and the tune's wall stays bounded."""


def _points(prompts: Sequence[torch.Tensor], batch_sizes: Sequence[int]) -> list[torch.Tensor]:
    return [p.repeat(b, 1) for b in batch_sizes for p in prompts]


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
    wall_budget_s: float = 150.0,
    build_budget_s: float = 120.0,
) -> TunedGenerator:
    """Tune ``model``'s generation (see the module rules); returns a ``TunedGenerator``."""
    start = time.perf_counter()
    policy = Policy(min_top1, max_rms_rel, wall_budget_s, build_budget_s)
    model.eval()
    device = devices.model_device(model)
    ids = [devices.to_device(prompt_ids(p, tokenizer), device) for p in prompts]
    points = _points(ids, batch_sizes)
    chosen = [BY_NAME[n] for n in candidates] if candidates is not None else list(CANDIDATES)
    refused = devices.refusals([c.name for c in chosen], device)
    kept = [c for c in chosen if c.name not in refused]
    ref = _reference(model, ids, new_tokens, device) if kept else None
    run = CandidateRun(model, points, new_tokens, ref, policy, start)
    run.refuse([c for c in chosen if c.name in refused], refused)
    run.start_ahead(kept)
    for cand in kept:
        run.prepare(cand)
    results = [
        GenerationResult(
            BASELINE,
            "eager-dynamic",
            "eager-dynamic",
            p.shape[0],
            p.shape[1],
            new_tokens,
            *time_hf(model, p, min(new_tokens, HF_TOKENS), hf_rule()),
        )
        for p in points
    ]
    results.extend(run.timed())
    primary = [
        r for r in results if r.batch == points[0].shape[0] and r.prompt_len == points[0].shape[1]
    ]
    choice = pick(strategy, primary, BASELINE)
    return TunedGenerator(model, choice, tuple(results), time.perf_counter() - start)
