"""A tiny Transformer encoder over token embeddings, taking keyword inputs."""

from __future__ import annotations

import torch
from torch import nn


class TinyEncoder(nn.Module):
    """Token ids → embeddings → 2 encoder layers → mean-pooled features and logits.

    Takes ``input_ids`` (int64, batch × 32) and returns a dict with ``pooled`` and
    ``logits`` so structured outputs are exercised end to end.
    """

    def __init__(
        self,
        vocab: int = 1000,
        dim: int = 128,
        heads: int = 4,
        layers: int = 2,
        seq: int = 32,
        classes: int = 4,
    ) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.randn(1, seq, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(
            dim, heads, dim_feedforward=dim * 2, dropout=0.0, batch_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(dim, classes)

    def forward(self, input_ids: torch.Tensor) -> dict[str, torch.Tensor]:
        """Pooled features and class logits."""
        h = self.encoder(self.embed(input_ids) + self.pos)
        pooled = h.mean(dim=1)
        return {"pooled": pooled, "logits": self.head(pooled)}


def transformer_samples(count: int = 4) -> list[dict[str, torch.Tensor]]:
    """``count`` distinct keyword samples ``{"input_ids": (1, 32) int64}``."""
    gen = torch.Generator().manual_seed(3)
    return [{"input_ids": torch.randint(0, 1000, (1, 32), generator=gen)} for _ in range(count)]
