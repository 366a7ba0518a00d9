"""A model file for ``aitune-fp tune`` fault tests (copied into each test's folder).

``AITUNE_TEST_FAULT`` (read at import) picks what the model's forward does while it is
being exported (``torch.export``, as ``aot_inductor`` and ONNX export do): ``segfault``
(a ``ctypes`` read of address 0), ``exit`` (``os._exit(7)``), ``hang`` (sleeps an hour),
or nothing. Eager calls never fault, so the baseline always profiles.
"""

import ctypes
import os
import time

import torch

FAULT = os.environ.get("AITUNE_TEST_FAULT", "")


class Model(torch.nn.Module):
    """One linear layer with the chosen fault in export."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``fc(x)``; the fault while exporting."""
        if torch.compiler.is_exporting():
            if FAULT == "segfault":
                ctypes.string_at(0)
            elif FAULT == "exit":
                os._exit(7)
            elif FAULT == "hang":
                time.sleep(3600)
        return self.fc(x)  # type: ignore[no-any-return]


def make() -> tuple[torch.nn.Module, list[torch.Tensor]]:
    """The model and four samples."""
    torch.manual_seed(0)
    return Model(), [torch.randn(1, 8) for _ in range(4)]


def leave() -> None:
    """A factory that ends the process instead of returning a model."""
    raise SystemExit(3)
