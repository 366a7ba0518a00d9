"""Tiny modules and samples for the backend and validation tests (fast to export/compile).

Everything is offered as a fixture (test files never import this conftest). Modules and
samples are session-scoped so that session-scoped builds can share them; backends only
move them to the CPU and switch them to eval mode, which they already are.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from aitune_fp.effects.inputs.samples import Samples, normalise_samples

CPU = torch.device("cpu")
MAX_BATCH = 8


class TinyMLP(nn.Module):
    """4 → 8 → 3, ReLU."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits."""
        return self.net(x)  # type: ignore[no-any-return]


class KeywordInputs(nn.Module):
    """Takes a dict of tensors as keyword arguments: ``x`` (float) and ``mask`` (float)."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Projected ``x`` gated by ``mask``."""
        return self.proj(x) * mask  # type: ignore[no-any-return]


class StructuredOutputs(nn.Module):
    """Two positional inputs, a tuple of a tensor and a dict out (nested structure)."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 2)

    def forward(
        self, x: torch.Tensor, y: torch.Tensor
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """``(proj(x), {"total": sum of x + y per row, "argmax": int64})``."""
        h = self.proj(x)
        return h, {"total": (x + y).sum(dim=1), "argmax": h.argmax(dim=1)}


class ItemBranch(nn.Module):
    """Python control flow on a tensor value: ``torch.export`` cannot trace it."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Doubles ``x`` when its sum is positive."""
        if x.sum().item() > 0:
            return x * 2
        return x


class NumpyInside(nn.Module):
    """Leaves torch for numpy inside ``forward``: no exporter can trace it."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x * 2`` computed by numpy."""
        return torch.from_numpy(x.numpy() * 2)


def seeded(factory: Callable[[], nn.Module]) -> nn.Module:
    """A module with deterministic weights, in eval mode (the global RNG is left alone)."""
    with torch.random.fork_rng():
        torch.manual_seed(0)
        return factory().eval()


def rows(*shape: int, seed: int) -> torch.Tensor:
    """Deterministic normal values."""
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


@pytest.fixture(scope="session")
def mlp() -> nn.Module:
    """A tiny MLP."""
    return seeded(TinyMLP)


@pytest.fixture(scope="session")
def keyword_module() -> nn.Module:
    """A module taking keyword tensors."""
    return seeded(KeywordInputs)


@pytest.fixture(scope="session")
def structured_module() -> nn.Module:
    """A module with two positional inputs and a nested tuple/dict output."""
    return seeded(StructuredOutputs)


@pytest.fixture(scope="session")
def untraceable_modules() -> dict[str, nn.Module]:
    """Modules ``torch.export`` cannot trace, by the reason."""
    return {"item branch": ItemBranch().eval(), "numpy inside": NumpyInside().eval()}


@pytest.fixture(scope="session")
def mlp_samples() -> Samples:
    """Three MLP samples of 1, 2 and 1 rows."""
    return normalise_samples([rows(1, 4, seed=1), rows(2, 4, seed=2), rows(1, 4, seed=3)])


@pytest.fixture(scope="session")
def keyword_samples() -> Samples:
    """Two keyword samples for :class:`KeywordInputs`."""
    return normalise_samples(
        [
            {"x": rows(1, 4, seed=4), "mask": torch.ones(1, 3)},
            {"x": rows(2, 4, seed=5), "mask": rows(2, 3, seed=10).sigmoid()},
        ]
    )


@pytest.fixture(scope="session")
def structured_samples() -> Samples:
    """Two positional-pair samples for :class:`StructuredOutputs`."""
    return normalise_samples(
        [(rows(1, 4, seed=6), rows(1, 4, seed=7)), (rows(3, 4, seed=8), rows(3, 4, seed=9))]
    )


@pytest.fixture
def work_dir(tmp_path: Path) -> Path:
    """A fresh work dir for one build."""
    return tmp_path / "work"


@pytest.fixture
def cpu() -> torch.device:
    """The CPU device."""
    return CPU


@pytest.fixture
def max_batch() -> int:
    """The largest batch size the backend tests validate at."""
    return MAX_BATCH


@pytest.fixture
def cuda() -> torch.device:
    """The first CUDA device; the test is skipped, with the reason, when there is none."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device: torch.cuda.is_available() is False")
    return torch.device("cuda", 0)


@pytest.fixture
def skip_unless_available() -> Callable[[Any, torch.device], None]:
    """Skip the calling test with the backend's own reason when it cannot run on a device."""

    def check(backend: Any, device: torch.device) -> None:
        reason = backend.unavailable_reason(device)
        if reason is not None:
            pytest.skip(f"needs an optional GPU library: {backend.describe()}: {reason}")

    return check
