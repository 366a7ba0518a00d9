"""A generation tune's inputs as token ids: the prompts, the points, the held-out rows and
the request the core checks before anything is built.

Rules: a prompt is token ids ([L] or [B, L]; the first row is kept) or a string with a
tokenizer; every prompt runs at every batch size (its row repeated), batch sizes first
(:func:`points`, the primary point first); the held-out prompts of the teacher-forced check
are seeded random ids of the shortest prompt's length (at least 4); a prompt that cannot be
read is a ``TuneError`` naming why.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from returns.io import IOFailure, IOResult, IOSuccess

from aitune_fp.core.generation.request import GenerationRequest
from aitune_fp.core.records import TuneError


def prompt_ids(prompt: Any, tokenizer: Any) -> torch.Tensor:
    """One prompt as token ids [1, L]: a string is tokenized by ``tokenizer``, a tensor's
    first row is kept ([L] or [B, L])."""
    if isinstance(prompt, str):
        if tokenizer is None:
            raise ValueError("string prompts need tokenizer=")
        prompt = tokenizer(prompt, return_tensors="pt")["input_ids"]
    ids = torch.as_tensor(prompt)
    return ids[:1] if ids.dim() == 2 else ids.unsqueeze(0)


def held_out(model: Any, lengths: Sequence[int], rows: int = 2) -> torch.Tensor:
    """``rows`` held-out prompts of the shortest prompt's length (at least 4), seeded."""
    gen = torch.Generator().manual_seed(1234)
    vocab = int(model.config.vocab_size)
    return torch.randint(0, vocab, (rows, max(min(lengths), 4)), generator=gen)


def points(prompts: Sequence[torch.Tensor], batch_sizes: Sequence[int]) -> list[torch.Tensor]:
    """Every (batch size, prompt) point as ids, batch sizes first (the primary first)."""
    return [p.repeat(b, 1) for b in batch_sizes for p in prompts]


def request_of(
    model: Any, ids: Sequence[torch.Tensor], new_tokens: int, batch_sizes: Sequence[int]
) -> GenerationRequest:
    """What the core's request check reads of the model and the run."""
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


def prompts_of(prompts: Sequence[Any], tokenizer: Any) -> IOResult[list[torch.Tensor], TuneError]:
    """Every prompt as ids [1, L], or the ``TuneError`` naming why one cannot be read."""
    try:
        return IOSuccess([prompt_ids(p, tokenizer) for p in prompts])
    except (ValueError, TypeError, RuntimeError) as error:
        return IOFailure(TuneError(f"a prompt cannot be read: {error}"))
