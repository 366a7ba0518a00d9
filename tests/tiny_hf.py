"""Tiny Hugging Face models built from configs (random weights, no download), shared by the
tests that tune real transformers, and the short plan they tune with."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from aitune_fp import ProfilingPlan, max_throughput
from aitune_fp.core.measure.stop_rules import fixed_steps

SHORT = dataclasses.replace(
    max_throughput,
    plan=ProfilingPlan(call_rule=fixed_steps(warmup=2, steps=4), max_batch_size=4),
    validate_performance=False,
)


def tiny_bert(**overrides: Any) -> torch.nn.Module:
    """A BERT-style encoder (vocabulary 200, width 32) in eval mode; ``overrides`` go to
    its config."""
    import transformers

    torch.manual_seed(0)
    fields = {
        "vocab_size": 200,
        "hidden_size": 32,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "intermediate_size": 64,
        "max_position_embeddings": 64,
        **overrides,
    }
    return transformers.BertModel(transformers.BertConfig(**fields)).eval()


def tiny_llama(vocab: int = 128) -> torch.nn.Module:
    """A two-layer causal LM (Llama, grouped-query attention) that returns its KV cache."""
    import transformers

    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=vocab,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=64,
        use_cache=True,
    )
    return transformers.LlamaForCausalLM(config).eval()


@contextlib.contextmanager
def generation_dir(folder: Path) -> Iterator[Path]:
    """``$AITUNE_FP_GENERATION_DIR`` set to ``folder`` for the block (the generation
    packages and OpenVINO models go there), restored after."""
    before = os.environ.get("AITUNE_FP_GENERATION_DIR")
    os.environ["AITUNE_FP_GENERATION_DIR"] = str(folder)
    try:
        yield folder
    finally:
        if before is None:
            del os.environ["AITUNE_FP_GENERATION_DIR"]
        else:
            os.environ["AITUNE_FP_GENERATION_DIR"] = before
