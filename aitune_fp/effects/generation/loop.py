"""Greedy decoding: a tight loop over a stepper, and Hugging Face ``generate`` as users run it.

Rules: greedy (argmax) only; ``min_new_tokens`` suppresses EOS until reached; a row that has
emitted EOS (any of ``eos_token_id`` when it is a list) keeps emitting ``pad_token_id`` (as
``generate`` does); the loop stops when every row is finished or ``max_new_tokens`` tokens
were produced; ``on_token`` (when given) sees each step's new tokens ([B, 1]) as soon as they
exist. Every tensor the loop makes is on the prompt's device. Returns prompt + new tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import torch


class Stepper(Protocol):
    """Prefill then one decode step per new token, plain tensors in and out."""

    def prefill(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None, max_len: int
    ) -> torch.Tensor: ...

    def decode(self, tokens: torch.Tensor) -> torch.Tensor: ...


def _next(logits: torch.Tensor, eos: torch.Tensor | None, allow_eos: bool) -> torch.Tensor:
    if eos is not None and not allow_eos:
        logits = logits.clone()
        logits[:, eos[eos < logits.shape[-1]]] = float("-inf")  # an id past the vocabulary
        # (a config's default EOS over a smaller vocabulary) can never be produced anyway
    return logits.argmax(-1, keepdim=True)


@torch.inference_mode()
def greedy(
    stepper: Stepper,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None = None,
    *,
    max_new_tokens: int,
    min_new_tokens: int = 0,
    eos_token_id: int | Sequence[int] | None = None,
    pad_token_id: int = 0,
    on_token: Callable[[torch.Tensor], Any] | None = None,
) -> torch.Tensor:
    """Greedy generation over ``stepper`` (see the module rules)."""
    device = input_ids.device
    eos = None if eos_token_id is None else torch.tensor(eos_token_id, device=device).reshape(-1)
    max_len = input_ids.shape[1] + max_new_tokens
    logits = stepper.prefill(input_ids, attention_mask, max_len)
    done = torch.zeros(input_ids.shape[0], 1, dtype=torch.bool, device=device)
    out = [input_ids]
    for i in range(max_new_tokens):
        token = _next(logits, eos, i >= min_new_tokens)
        token = torch.where(done, torch.full_like(token, pad_token_id), token)
        out.append(token)
        if on_token is not None:
            on_token(token)
        if eos is not None:
            done = done | torch.isin(token, eos)
            if bool(done.all()):
                break
        if i + 1 < max_new_tokens:
            logits = stepper.decode(token)
    return torch.cat(out, dim=1)


@torch.inference_mode()
def hf_generate(
    model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor | None, new_tokens: int
) -> torch.Tensor:
    """The baseline: ``model.generate`` greedy with its default (dynamic) cache."""
    mask = attention_mask if attention_mask is not None else torch.ones_like(input_ids)
    pad = getattr(model.generation_config, "pad_token_id", None)
    out: torch.Tensor = model.generate(
        input_ids,
        attention_mask=mask,
        max_new_tokens=new_tokens,
        min_new_tokens=new_tokens,
        do_sample=False,
        pad_token_id=0 if pad is None else pad,
    )
    return out
