"""A causal LM the size people deploy, from a config (random weights, no download).

:func:`qwen2_half_billion` is a Qwen2 the size of Qwen2.5-0.5B: 24 layers, hidden 896, 14
query / 2 key-value heads, MLP 4864, vocabulary 151936, tied embeddings (494M parameters,
1.84 GiB in fp32), its weights drawn from ``seed``; ``layers`` shrinks it for a quick look.
``peaked`` multiplies the final norm's weight, so the logits are peaked like a trained
model's (their order is unchanged). Used by the generation benchmarks
(``benchmarks/generation_scale.py``, ``benchmarks/accuracy_quantized.py``) and as a
``tune-generate`` factory: ``aitune_fp.models.causal_lm:qwen2_half_billion``.
"""

from __future__ import annotations

from typing import Any

import torch


def qwen2_half_billion(layers: int = 24, seed: int = 0, peaked: float = 1.0) -> Any:
    """The Qwen2.5-0.5B-sized model in eval mode (see the module rules)."""
    import transformers

    torch.manual_seed(seed)
    config = transformers.Qwen2Config(
        vocab_size=151936,
        hidden_size=896,
        intermediate_size=4864,
        num_hidden_layers=layers,
        num_attention_heads=14,
        num_key_value_heads=2,
        max_position_embeddings=32768,
        tie_word_embeddings=True,
        rms_norm_eps=1e-6,
    )
    model: Any = transformers.Qwen2ForCausalLM(config)
    if peaked != 1.0:
        with torch.no_grad():
            model.model.norm.weight.mul_(peaked)
    return model.eval()
