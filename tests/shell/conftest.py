"""Fixtures shared by the shell tests: a tiny model and its samples."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture
def module() -> torch.nn.Module:
    """A tiny deterministic linear model."""
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU()).eval()


@pytest.fixture
def samples() -> list[torch.Tensor]:
    """Three distinct samples of shape (1, 8)."""
    return [torch.randn(1, 8) for _ in range(3)]
