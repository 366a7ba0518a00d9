"""The demo models as ``aitune-fp tune`` factories: ``aitune_fp.models.factories:mlp``.

Each factory returns ``(module, samples)`` exactly as ``aitune-fp demo`` tunes them, so a
fleet job tunes a demo model with the same ``tune`` command as any user's model.
"""

from __future__ import annotations

from typing import Any

import torch

from aitune_fp.models import DEMO_MODELS


def _demo(name: str) -> tuple[torch.nn.Module, list[Any]]:
    model = DEMO_MODELS[name]
    return model.build(), model.samples()


def mlp() -> tuple[torch.nn.Module, list[Any]]:
    """The demo MLP and its samples."""
    return _demo("mlp")


def cnn() -> tuple[torch.nn.Module, list[Any]]:
    """The demo CNN and its samples."""
    return _demo("cnn")


def transformer() -> tuple[torch.nn.Module, list[Any]]:
    """The demo Transformer encoder and its samples."""
    return _demo("transformer")
