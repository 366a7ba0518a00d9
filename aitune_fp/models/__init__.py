"""Embedded demo models (no downloads) with sample-input factories.

Each :class:`DemoModel` builds a small, deterministic ``nn.Module`` in eval mode and the
sample inputs to tune it with. They are used by the tests, the demo and the benchmarks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import torch

from aitune_fp.models.cnn import SmallCNN, cnn_samples
from aitune_fp.models.mlp import MLP, mlp_samples
from aitune_fp.models.transformer import TinyEncoder, transformer_samples


@dataclass(frozen=True, slots=True)
class DemoModel:
    """A named demo model: ``build()`` gives the module, ``samples()`` its sample inputs."""

    name: str
    summary: str
    factory: Callable[[], torch.nn.Module]
    sample_factory: Callable[[], list[Any]]

    def build(self) -> torch.nn.Module:
        """A fresh module with deterministic weights, in eval mode."""
        with torch.random.fork_rng():
            torch.manual_seed(0)
            return self.factory().eval()

    def samples(self) -> list[Any]:
        """Deterministic sample inputs (each with a batch axis 0)."""
        return self.sample_factory()


DEMO_MODELS: Mapping[str, DemoModel] = MappingProxyType(
    {
        "mlp": DemoModel("mlp", "3-layer MLP, 256 → 512 → 512 → 10", MLP, mlp_samples),
        "cnn": DemoModel("cnn", "small CNN on 3×64×64 images", SmallCNN, cnn_samples),
        "transformer": DemoModel(
            "transformer",
            "2-layer Transformer encoder, 32 tokens × 128",
            TinyEncoder,
            transformer_samples,
        ),
    }
)

__all__ = ["DEMO_MODELS", "MLP", "DemoModel", "SmallCNN", "TinyEncoder"]
