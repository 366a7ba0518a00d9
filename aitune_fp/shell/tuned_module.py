"""``TunedModule``: an ``nn.Module`` whose ``forward`` runs the selected backend.

Rules: calling it costs one Python call on top of the winner's runner (no copies, no
checks); ``.selection`` is the core ``Selection``, ``.backend`` the winner's description,
``.record`` the whole run as data. ``close()`` frees the backend's resources.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from aitune_fp.core.records import Selection
from aitune_fp.effects.backends.base import Backend, Built
from aitune_fp.effects.inputs import Samples

if TYPE_CHECKING:
    from aitune_fp.core.record.run_record import RunRecord


class TunedModule(torch.nn.Module):
    """Runs the tuned backend; ``forward(*args, **kwargs)`` takes what the module took."""

    def __init__(
        self,
        built: Built,
        backend_config: Backend,
        selection: Selection,
        samples: Samples,
        record: RunRecord | None = None,
        source: torch.nn.Module | None = None,
    ) -> None:
        super().__init__()
        self.built = built
        self.backend_config = backend_config
        self.selection = selection
        self.samples = samples
        self.record = record
        self._runner = built.runner
        self._source = [source]  # a list keeps the user's module out of our parameters

    @property
    def backend(self) -> str:
        """The description of the backend that runs this module."""
        return self.selection.backend

    @property
    def source_module(self) -> torch.nn.Module | None:
        """The eager module this was tuned from (used by save to record a recipe)."""
        return self._source[0]

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Run the selected backend."""
        return self._runner(*args, **kwargs)

    def close(self) -> None:
        """Free the backend's resources; the module cannot run afterwards."""
        self.built.close()

    def extra_repr(self) -> str:
        """The backend and its metric, for ``print(tuned)``."""
        r = self.selection.result
        return f"backend={self.backend!r}, batch_size={r.selected_batch_size}, metric={r.metric:g}"
