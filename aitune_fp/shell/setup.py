"""What a run works with, and what it has done: :class:`Setup` and :class:`RunState`.

Rules: a :class:`Setup` is fixed before the first build (the
:class:`~aitune_fp.effects.build_request.BuildRequest` every candidate is built, checked and
profiled with: the module and samples on the device, the sweep's batch sizes, the artifact
cache; the strategy, whose profiling plan the request holds; where files and progress go,
the isolation and its timeouts, the candidates the plan left out as not native here); a
:class:`RunState` is what the interpreter needs to perform (the runners still alive, the
config of each backend built, by name) and the session deciding the run, which alone
knows the run so far: the record is derived from it
(:func:`~aitune_fp.core.record.derive.record_of`). Both are frozen; the interpreter
(:mod:`aitune_fp.shell.drive`) replaces the state after every command.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from pyrsistent import PMap, pmap
from returns.result import Result

from aitune_fp.core.accuracy.reach import LeftOut
from aitune_fp.core.record.max_batch import MaxBatchSearch
from aitune_fp.core.records import BackendFailure, Profile, TuneState
from aitune_fp.core.session import Done, Session
from aitune_fp.core.strategy import Strategy
from aitune_fp.effects.backends.base import Backend, Built
from aitune_fp.effects.build_request import BuildRequest
from aitune_fp.effects.candidate import CandidateRun
from aitune_fp.effects.isolation import Timeouts
from aitune_fp.shell.io import perform
from aitune_fp.shell.progress import ProgressEvent, ProgressSink
from aitune_fp.shell.workspace import Workspace


@dataclass(frozen=True, slots=True)
class Setup:
    """What a run works with: the request every candidate is built with (the module and
    samples on the device, the sweep's batch sizes, the artifact cache), the strategy, and
    where its files and progress go."""

    request: BuildRequest
    strategy: Strategy
    progress: ProgressSink
    total: int
    max_batch_size: int = 1
    outside: str = "warn"
    workspace: Workspace | None = None
    isolation: bool = False
    timeouts: Timeouts = field(default_factory=Timeouts)
    max_batch_search: MaxBatchSearch | None = None
    left_out: tuple[LeftOut, ...] = ()

    def emit(self, kind: str, backend: str = "", done: int = 0, **fields: Any) -> None:
        """Send one progress event (``done`` backends so far)."""
        self.progress(ProgressEvent(kind, backend, done=done, total=self.total, **fields))

    def swept(self, batch_sizes: tuple[int, ...], strategy: Strategy | None = None) -> Setup:
        """This setup sweeping ``batch_sizes`` (under ``strategy``, whose profiling plan
        the request then holds, when given)."""
        strategy = strategy or self.strategy
        request = replace(self.request, batch_sizes=batch_sizes, plan=strategy.plan)
        return replace(self, request=request, strategy=strategy)


@dataclass(frozen=True, slots=True)
class RunState:
    """What a run needs to perform: the runners alive and the config of each backend
    built, by name; and the session (``None`` before it starts; ``done`` once it ended)."""

    live: PMap[str, Built] = field(default_factory=pmap)
    session: Session | None = None
    done: Done | None = None
    configs: PMap[str, Backend] = field(default_factory=pmap)

    @property
    def fold(self) -> TuneState:
        """The fold's state so far (empty before the session starts)."""
        return self.session.fold if self.session is not None else TuneState()


def as_result(run: CandidateRun) -> Result[Profile, BackendFailure]:
    """A run's outcome as the fold reads it."""
    return perform(run.outcome)
