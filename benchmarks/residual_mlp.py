"""A hidden-like model for the command line's timings: a 3-block residual MLP.

``aitune-fp tune benchmarks/residual_mlp.py:build --input-shape 8x128`` (docs/service.md,
the decision cache hit's figures): 128 features in, three blocks of
``LayerNorm(x + Linear(ReLU(Linear(x))))`` at width 256, 10 out; seeded weights.
"""

from __future__ import annotations

import torch
from torch import nn


class Block(nn.Module):
    """One residual block: two linear layers around a ReLU, added back, normalised."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.a = nn.Linear(width, width)
        self.b = nn.Linear(width, width)
        self.norm = nn.LayerNorm(width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``norm(x + b(relu(a(x))))``."""
        return self.norm(x + self.b(torch.relu(self.a(x))))  # type: ignore[no-any-return]


class ResidualMLP(nn.Module):
    """128 → 256, three residual blocks, → 10."""

    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(128, 256)
        self.blocks = nn.Sequential(*[Block(256) for _ in range(3)])
        self.head = nn.Linear(256, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Class logits for ``x`` of shape ``(batch, 128)``."""
        return self.head(self.blocks(self.inp(x)))  # type: ignore[no-any-return]


def build() -> nn.Module:
    """The model in eval mode, weights from seed 0."""
    torch.manual_seed(0)
    return ResidualMLP().eval()
