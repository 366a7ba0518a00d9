"""``aitune_fp.save`` and ``aitune_fp.load``: one pair for a tuned module and a tuned generator.

Rules: ``save`` writes a ``TunedModule`` as :mod:`aitune_fp.shell.persist` does and a
``TunedGenerator`` as :mod:`aitune_fp.shell.generation.generator_save` does (both sealed
folders: a manifest listing every file's size and sha256); ``load`` reads a generator save
(found by its manifest's format) over ``module=`` (its pick is a recipe: without the model a
``LoadError`` says so) and any other folder as a module save. ``expected_digest`` pins the
manifest in both cases.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from aitune_fp.shell.generation.generator_save import is_generator_save
from aitune_fp.shell.persist import LoadError
from aitune_fp.shell.persist import load as load_module
from aitune_fp.shell.persist import save as save_module
from aitune_fp.shell.tuned_module import TunedModule

if TYPE_CHECKING:  # importing it imports the generation loop and its HF helpers
    from aitune_fp.shell.generation.tuned_generator import TunedGenerator

__all__ = ["LoadError", "load", "save"]


def save(tuned: TunedModule | TunedGenerator, path: str | Path) -> Path:
    """Save ``tuned`` (a tuned module or generator) to the folder ``path``; returns it."""
    if isinstance(tuned, TunedModule):
        return save_module(tuned, path)
    return tuned.save(path)


def load(
    path: str | Path,
    module: Any = None,
    *,
    device: str | None = None,
    expected_digest: str | None = None,
) -> TunedModule | TunedGenerator:
    """The tuned module or generator saved at ``path`` (see the module rules)."""
    if not is_generator_save(path):
        return load_module(path, module, device=device, expected_digest=expected_digest)
    from aitune_fp.shell.generation.tuned_generator import TunedGenerator

    if module is None:
        raise LoadError(
            f"{path} holds a generator pick, a recipe: pass the model it was tuned from, "
            "load(path, module=model)"
        )
    return TunedGenerator.load(path, module=module, expected_digest=expected_digest)
