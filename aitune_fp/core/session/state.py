"""The session's value: the plan it was started with and everything it has learnt.

Rules: a :class:`Session` is never changed, only replaced by ``step``; ``events`` is the
log of every answer it was given, in order (a run keeps it, and replaying it reproduces
the session: :mod:`aitune_fp.core.session.replay`); ``phase`` says which answer it
waits for and carries the facts only that phase needs (:mod:`aitune_fp.core.session.phase`:
the candidate being built, the rounds' setup, the verification's plan, the selection
once finished); ``phase_name`` is its short word for logs; ``profiles`` holds each
backend's profile as the record shows it (the race's marks, a widened contender's merged
profile, the final rounds' samples) and ``rounded`` the backends the final rounds timed
(each participant once per place, in order); ``notes`` is every note it said, in order
(each ``Say`` it gave: :mod:`aitune_fp.core.session.notes`): the record is derived from
the session alone (:func:`~aitune_fp.core.record.derive.record_of`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyrsistent import PMap, pmap
from returns.result import Result

from aitune_fp.core.records import Candidate, Profile, Selection, TuneError, TuneState
from aitune_fp.core.session.events import Event
from aitune_fp.core.session.notes import Note
from aitune_fp.core.session.phase import Baseline, Finished, Phase, Sweeping, Widening
from aitune_fp.core.session.racing import RaceState
from aitune_fp.core.strategy import Strategy
from aitune_fp.core.verification.judge import Verification


@dataclass(frozen=True, slots=True)
class SessionPlan:
    """What a session decides about: the strategy, the candidates' unique names in the
    user's order, the baseline's name, whether clear losers may stop early, the
    verification's seconds (``None`` or ``0``: none), a baseline profile to reuse
    instead of profiling one, each variant's base by name (variants of a clearly
    beaten base are not built: :mod:`aitune_fp.core.session.pruning`), the candidates
    whose builds the interpreter can do ahead (``ahead``: their build fills a cache the
    sweep's build reads) and how many builds it may run at once (``parallel``; see
    :mod:`aitune_fp.core.session.prebuild` for which are), and the batch-size ``ladder``
    the candidates race on (``()``: no race, each build sweeps the interpreter's own
    ladder; see :mod:`aitune_fp.core.session.race_sweep` for when a race is run)."""

    strategy: Strategy
    candidates: tuple[str, ...]
    baseline: str = "eager"
    early_stop: bool = True
    verify_seconds: float | None = None
    reused_baseline: Profile | None = None
    variant_of: PMap[str, str] = field(default_factory=pmap)
    ahead: tuple[str, ...] = ()
    parallel: int = 0
    ladder: tuple[int, ...] = ()

    @property
    def admitted(self) -> tuple[str, ...]:
        """The candidates the strategy admits (the only ones that can be built).

        >>> from aitune_fp.core.strategies import max_throughput, one_backend
        >>> SessionPlan(one_backend(max_throughput, "b"), ("a", "b")).admitted
        ('b',)
        """
        admits = self.strategy.admits
        return tuple(n for n in self.candidates if admits is None or admits(n))


@dataclass(frozen=True, slots=True)
class Session:
    """A tune in progress: the fold's state and the facts the next decisions need."""

    plan: SessionPlan
    phase: Phase = field(default_factory=Baseline)
    fold: TuneState = field(default_factory=TuneState)
    fed: tuple[Candidate, ...] = ()
    live: frozenset[str] = frozenset()
    baseline_profile: Profile | None = None
    baseline_answer: Candidate | None = None
    race: RaceState | None = None
    profiles: PMap[str, Profile] = field(default_factory=pmap)
    sweep_seconds: float = 0.0
    events: tuple[Event, ...] = ()
    notes: tuple[Note, ...] = ()
    rounded: tuple[str, ...] = ()

    @property
    def strategy(self) -> Strategy:
        """The plan's strategy."""
        return self.plan.strategy

    @property
    def phase_name(self) -> str:
        """The phase's short word (``sweep``, ``rounds``, ``done``…), for logs and records."""
        return self.phase.name

    @property
    def waiting_for(self) -> str | None:
        """The name a ``Profiled`` must carry now (``None``: no build is pending)."""
        match self.phase:
            case Baseline():
                return self.plan.baseline
            case Sweeping(pending) | Widening(pending):
                return self.plan.candidates[pending]
        return None

    @property
    def selection(self) -> Result[Selection, TuneError] | None:
        """The session's outcome once finished (``None`` before)."""
        return self.phase.selection if isinstance(self.phase, Finished) else None

    @property
    def verification(self) -> Verification | None:
        """The verification that shaped the outcome, once finished (``None``: none ran)."""
        return self.phase.verification if isinstance(self.phase, Finished) else None
