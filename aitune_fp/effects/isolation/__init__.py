"""Isolation: each backend's build, validation and profiling run in a worker process.

A crash (a signal, ``os._exit``, an abort), a hang past a timeout or an out-of-memory kill
inside a backend ends only its worker; the tune process turns it into a
``BackendFailure(backend, stage, reason)`` and goes on with the other backends. See
``docs/reliability.md`` for the design and why.

- :mod:`~aitune_fp.effects.isolation.protocol`: the timeouts, the messages, the words;
- :mod:`~aitune_fp.effects.isolation.worker`: what runs in the worker;
- :mod:`~aitune_fp.effects.isolation.server`: the fork server, paid once per process;
- :mod:`~aitune_fp.effects.isolation.client`: starting, watching and ending a worker;
- :mod:`~aitune_fp.effects.isolation.isolated`: the isolated candidate and max-batch search.
"""

from typing import TYPE_CHECKING, Any

from aitune_fp.effects.isolation.protocol import Timeouts

if TYPE_CHECKING:
    from aitune_fp.effects.isolation.isolated import (
        isolated_candidate,
        isolated_max_batch,
        materialize,
        materialized,
    )

__all__ = ["Timeouts", "isolated_candidate", "isolated_max_batch", "materialize", "materialized"]
_LAZY = frozenset({"isolated_candidate", "isolated_max_batch", "materialize", "materialized"})


def __getattr__(name: str) -> Any:
    """The isolated candidate and max-batch search, imported on first use: importing the
    package (the fork server's head start, :mod:`.server`) never imports torch."""
    if name in _LAZY:
        from aitune_fp.effects.isolation import isolated

        return getattr(isolated, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
