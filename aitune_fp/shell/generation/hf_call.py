"""A Hugging Face ``generate`` call, resolved as ``generate`` resolves it, for the greedy loop.

Rules:
- the settings are the model's ``_prepare_generation_config``: the call's keyword arguments
  over its ``generation_config`` (or the model's), over the global defaults;
- a setting or argument the greedy loop cannot honour is an :class:`UnsupportedArgument`
  naming it (:func:`aitune_fp.core.generation.hf_arguments.refusals`), raised before any
  model call;
- lengths as ``generate`` counts them: ``max_new_tokens`` wins over ``max_length`` (a total,
  default 20), ``min_new_tokens`` and ``min_length`` (a total) give the tokens before which
  EOS is suppressed; ``pad_token_id`` defaults to the first EOS id;
- a cache the caller passes (``past_key_values``/``cache``: a prefix already run) is data,
  never refused: :attr:`GreedyCall.carries_cache` says the call must continue that cache;
- without ``attention_mask`` the mask is inferred from padding as ``generate`` infers it
  (``input_ids != pad`` when the pad id occurs in the prompt and is not an EOS id; else ones).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from aitune_fp.core.generation.hf_arguments import NEUTRAL, refusals

CACHES = ("past_key_values", "cache")


class UnsupportedArgument(ValueError):
    """A ``generate`` argument the tuned generator cannot honour; the message names it."""


@dataclass(frozen=True, slots=True)
class GreedyCall:
    """Everything the greedy loop needs from one ``generate`` call."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    max_new_tokens: int
    min_new_tokens: int
    eos_token_id: tuple[int, ...] | None
    pad_token_id: int
    return_dict: bool
    carries_cache: bool = False


def _ids(value: Any) -> tuple[int, ...] | None:
    if value is None:
        return None
    if isinstance(value, torch.Tensor):
        return tuple(int(v) for v in value.reshape(-1).tolist())
    return tuple(int(v) for v in value) if isinstance(value, list | tuple) else (int(value),)


def _mask(ids: torch.Tensor, pad: int | None, eos: tuple[int, ...] | None) -> torch.Tensor:
    if pad is not None and bool((ids == pad).any()) and pad not in (eos or ()):
        return ids.ne(pad).long()
    return torch.ones_like(ids)


def _lengths(config: Any, prompt_len: int) -> tuple[int, int]:
    if config.max_new_tokens is not None:
        most = int(config.max_new_tokens)
    else:
        most = int(config.max_length if config.max_length is not None else 20) - prompt_len
    if most < 1:
        raise UnsupportedArgument(
            f"the prompt has {prompt_len} tokens and max_length is {config.max_length}: "
            "nothing to generate (pass max_new_tokens)"
        )
    least = max(int(config.min_new_tokens or 0), int(config.min_length or 0) - prompt_len)
    return most, min(least, most)


def resolve(
    model: Any,
    input_ids: torch.Tensor | None,
    attention_mask: torch.Tensor | None,
    generation_config: Any,
    kwargs: dict[str, Any],
) -> GreedyCall:
    """The greedy call ``model.generate(input_ids, attention_mask=…, **kwargs)`` makes (see
    the module rules); raises :class:`UnsupportedArgument` for what it cannot honour."""
    if input_ids is None:
        raise UnsupportedArgument("generate needs input_ids (the prompt's token ids)")
    config, extra = model._prepare_generation_config(generation_config, **kwargs)
    values = config.to_dict()
    settings = {name: values.get(name) for name in NEUTRAL}
    passed_on = ("output_attentions", "output_hidden_states", *CACHES)  # settings; caches
    unused = {k: v for k, v in extra.items() if k not in passed_on}
    refused = refusals(settings, unused)
    if refused:
        raise UnsupportedArgument("; ".join(refused))
    ids = input_ids if input_ids.dim() == 2 else input_ids.unsqueeze(0)
    eos = _ids(config.eos_token_id)
    pad = config.pad_token_id if config.pad_token_id is not None else (eos[0] if eos else None)
    mask = attention_mask if attention_mask is not None else _mask(ids, pad, eos)
    most, least = _lengths(config, ids.shape[1])
    return GreedyCall(
        ids,
        mask if mask.dim() == 2 else mask.unsqueeze(0),
        most,
        least,
        eos,
        int(pad) if pad is not None else 0,
        bool(config.return_dict_in_generate),
        any(extra.get(name) is not None for name in CACHES),
    )
