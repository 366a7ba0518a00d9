"""Prefill and decode steps over a static KV cache, taking and returning plain tensors.

Rules: the cache is allocated once per (batch, max length, dtype) and reset before each
prefill; the attention mask handed to the model always has the cache's full length (prompt
mask, then ones), so the decode step has one static shape and a compiled step never
recompiles across steps. Positions follow the mask (left padding counts from the first real
token), as Hugging Face ``generate`` computes them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from transformers import StaticCache

Step = Callable[..., torch.Tensor]


@dataclass(frozen=True, slots=True)
class StepRecipe:
    """How a candidate runs one phase: eager or ``torch.compile`` (the model's dtype is set by
    the caller: a bf16 candidate hands a bf16 copy of the model)."""

    compiled: bool = False


def _forward(model: torch.nn.Module) -> Step:
    def step(
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        position_ids: torch.Tensor,
        cache_position: torch.Tensor,
        cache: Any,
    ) -> torch.Tensor:
        out = model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            position_ids=position_ids,
            cache_position=cache_position,
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=1,
        )
        logits: torch.Tensor = out.logits[:, -1, :].float()
        return logits

    return step


class StaticStepper:
    """A model's prefill and decode steps over one static cache (plain tensors in and out)."""

    def __init__(self, model: torch.nn.Module, prefill: StepRecipe, decode: StepRecipe) -> None:
        self.model = model
        self.prefill_recipe, self.decode_recipe = prefill, decode
        base = _forward(model)
        self._prefill = torch.compile(base, dynamic=True) if prefill.compiled else base
        self._decode = torch.compile(base, dynamic=False) if decode.compiled else base
        self._cache: Any = None
        self._cache_key: tuple[int, int] = (0, 0)
        self._mask = torch.ones(0)
        self._next_pos = torch.zeros(0)
        self._length = 0

    def _cache_for(self, batch: int, max_len: int) -> Any:
        if self._cache is None or self._cache_key != (batch, max_len):
            config: Any = self.model.config
            self._cache = StaticCache(config=config, max_cache_len=max_len)
            self._cache_key = (batch, max_len)
        else:
            self._cache.reset()
        return self._cache

    @torch.inference_mode()
    def prefill(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None, max_len: int
    ) -> torch.Tensor:
        """Reset the cache, run the prompt, return the next-token logits (float32, [B, V])."""
        batch, length = input_ids.shape
        mask = attention_mask if attention_mask is not None else torch.ones_like(input_ids)
        cache = self._cache_for(batch, max_len)
        full = torch.ones(batch, max_len, dtype=mask.dtype)
        full[:, :length] = mask
        positions = (mask.long().cumsum(-1) - 1).clamp(min=0)
        self._mask, self._length = full, length
        self._next_pos = positions[:, -1:] + 1
        return self._prefill(input_ids, full, positions, torch.arange(length), cache)

    @torch.inference_mode()
    def decode(self, tokens: torch.Tensor) -> torch.Tensor:
        """Append one token per row ([B, 1]) to the cache, return the next-token logits."""
        position = self._next_pos
        cache_position = torch.tensor([self._length])
        self._length += 1
        self._next_pos = position + 1
        return self._decode(tokens, self._mask, position, cache_position, self._cache)
