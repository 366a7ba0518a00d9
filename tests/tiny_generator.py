"""A ``TunedGenerator`` over a tiny model with a chosen pick, built without measuring (for
tests of the call paths: generate, call, swap, serve; the timings in its record are
placeholders that no test reads)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aitune_fp.core.generation import GenerationPick, GenerationResult

if TYPE_CHECKING:  # importing it imports transformers, which a GPU check may lack
    from aitune_fp import TunedGenerator


def picked(model: Any, name: str = "eager_static") -> TunedGenerator:
    """The generator whose pick is candidate ``name`` (fp32 eager static cache by default)."""
    from aitune_fp import TunedGenerator
    from aitune_fp.shell.generation.candidates import BASELINE

    rows = tuple(
        GenerationResult(n, f"{n}-prefill", f"{n}-decode", 1, 8, 4, 1.0, 1.0)
        for n in dict.fromkeys((BASELINE, name))
    )
    chosen = next(r for r in rows if r.name == name)
    return TunedGenerator(model, GenerationPick(chosen, f"forced: {name}"), rows, 0.0)
