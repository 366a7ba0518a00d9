"""A 3-layer MLP on 256 features."""

from __future__ import annotations

import torch
from torch import nn


class MLP(nn.Module):
    """256 → 512 → 512 → 10 with GELU activations."""

    def __init__(self, features: int = 256, hidden: int = 512, classes: int = 10) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(features, hidden),
            nn.GELU(),
            nn.Linear(hidden, hidden),
            nn.GELU(),
            nn.Linear(hidden, classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits for a batch of feature vectors."""
        return self.net(x)  # type: ignore[no-any-return]


def mlp_samples(count: int = 4) -> list[torch.Tensor]:
    """``count`` distinct samples of shape (1, 256)."""
    gen = torch.Generator().manual_seed(1)
    return [torch.randn(1, 256, generator=gen) for _ in range(count)]
