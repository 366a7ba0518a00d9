"""A causal LM step whose static KV cache is plain tensors: exportable (``torch.export``).

Rules (Hugging Face's executorch recipe, ``TorchExportableModuleWithStaticCache``, with the
cache moved from buffers to inputs so one program serves every batch size and both phases):
the keys and values of every layer are inputs ``[B, heads, capacity, head_dim]`` updated in
place at ``cache_position``; the attention mask always has the cache's full length (prompt
mask, then ones); sliding-window layers become plain static layers (generation past the
window is not supported, as in Hugging Face's recipe). The step returns the float32 logits of
the last position ([B, V]).
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import StaticCache
from transformers.cache_utils import StaticLayer


def cache_shapes(model: Any) -> tuple[int, int, int]:
    """(layers, key/value heads, head dim) of ``model``'s text config."""
    text = model.config.get_text_config()  # a Hugging Face config: optional fields vary
    heads = int(getattr(text, "num_key_value_heads", None) or text.num_attention_heads)
    head_dim = getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads
    return int(text.num_hidden_layers), heads, int(head_dim)


def empty_cache(model: Any, batch: int, capacity: int) -> tuple[list[torch.Tensor], ...]:
    """Zeroed (keys, values) lists for ``batch`` rows and ``capacity`` positions, on the
    model's device in its dtype."""
    layers, heads, head_dim = cache_shapes(model)
    first = next(model.parameters())
    shape, dtype, device = (batch, heads, capacity, head_dim), first.dtype, first.device

    def one() -> list[torch.Tensor]:
        return [torch.zeros(shape, dtype=dtype, device=device) for _ in range(layers)]

    return one(), one()


def next_logits(
    model: torch.nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    position_ids: torch.Tensor,
    cache_position: torch.Tensor,
    cache: Any,
) -> torch.Tensor:
    """One forward over ``cache``: the float32 logits of the last position ([B, V])."""
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


def _bind(layer: StaticLayer, keys: torch.Tensor, values: torch.Tensor, start: Any) -> None:
    layer.keys, layer.values = keys, values
    layer.max_cache_len = keys.shape[2]
    layer.batch_size, layer.num_heads = keys.shape[0], keys.shape[1]
    layer.k_head_dim, layer.v_head_dim = keys.shape[3], values.shape[3]
    layer.device, layer.is_initialized = keys.device, True
    layer.cumulative_length = start.clone()


class CacheStep(torch.nn.Module):
    """``forward(input_ids, attention_mask, position_ids, cache_position, keys, values)``:
    one prefill or decode step writing its keys and values into ``keys``/``values``."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model
        config: Any = model.config
        self.layers = len(StaticCache(config=config, max_cache_len=1).layers)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        position_ids: torch.Tensor,
        cache_position: torch.Tensor,
        keys: list[torch.Tensor],
        values: list[torch.Tensor],
    ) -> torch.Tensor:
        """The next-token logits (float32, [B, V]); the cache is updated in place."""
        config: Any = self.model.config
        cache = StaticCache(config=config, max_cache_len=keys[0].shape[2])
        layers = [StaticLayer(keys[0].shape[2]) for _ in range(self.layers)]
        for layer, k, v in zip(layers, keys, values, strict=True):
            _bind(layer, k, v, cache_position[0])
        cache.layers = list(layers)
        return next_logits(
            self.model, input_ids, attention_mask, position_ids, cache_position, cache
        )
