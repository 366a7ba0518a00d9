"""Refuse generation tuning and timing in this process: every name that a loaded
``aitune_fp`` module binds to ``tune_generate`` or to a generation timer is found, so a test
can replace each with :func:`refuse` (a re-tune or a re-measurement on load then fails it,
however the caller imported the name)."""

from __future__ import annotations

import sys
from typing import Any, NoReturn

TIMERS = ("time_calls", "time_hf", "time_stepper")


def refuse(*_args: Any, **_kwargs: Any) -> NoReturn:
    """What a refused function does: fail."""
    raise AssertionError("loading re-tuned or re-measured")


def bindings() -> list[tuple[Any, str]]:
    """Every (module, name) of a loaded ``aitune_fp`` module bound to ``tune_generate`` or
    a generation timer (their own modules included)."""
    import aitune_fp.effects.generation.timing as timing
    import aitune_fp.shell.generation.measure  # noqa: F401  (binds the timers it uses)
    import aitune_fp.shell.generation.tune_generate as tuning

    refused = {id(getattr(timing, n)) for n in TIMERS} | {id(tuning.tune_generate)}
    found = []
    for name, module in list(sys.modules.items()):
        if name == "aitune_fp" or name.startswith("aitune_fp."):
            found += [(module, k) for k, v in list(vars(module).items()) if id(v) in refused]
    return found
