"""A small CNN classifier on 3×64×64 images."""

from __future__ import annotations

import torch
from torch import nn


class SmallCNN(nn.Module):
    """Three conv-BN-ReLU blocks with pooling, then a linear head."""

    def __init__(self, classes: int = 10) -> None:
        super().__init__()

        def block(cin: int, cout: int) -> nn.Sequential:
            return nn.Sequential(
                nn.Conv2d(cin, cout, 3, padding=1),
                nn.BatchNorm2d(cout),
                nn.ReLU(),
                nn.MaxPool2d(2),
            )

        self.features = nn.Sequential(block(3, 16), block(16, 32), block(32, 64))
        self.head = nn.Linear(64, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits for a batch of images."""
        y = self.features(x).mean(dim=(2, 3))
        return self.head(y)  # type: ignore[no-any-return]


def cnn_samples(count: int = 4) -> list[torch.Tensor]:
    """``count`` distinct images of shape (1, 3, 64, 64)."""
    gen = torch.Generator().manual_seed(2)
    return [torch.randn(1, 3, 64, 64, generator=gen) for _ in range(count)]
