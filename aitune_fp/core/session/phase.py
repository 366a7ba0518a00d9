"""The session's phase: which answer it waits for, each phase a value carrying its own facts.

Rules: a session is in exactly one phase (:data:`Phase`), a frozen record holding only
what that phase needs, and ``step`` matches on it:

- :class:`Prebuilding` waits for a ``Prebuilt`` (the builds ahead);
- :class:`Baseline` waits for the baseline's ``Profiled``;
- :class:`Sweeping` waits for the ``Profiled`` of candidate number ``pending``;
- :class:`Widening` waits for the ``Profiled`` of contender ``pending`` of the race,
  measured again at larger batch sizes;
- :class:`Swept` is the passing moment between the sweep and what follows it, never
  seen by an interpreter;
- :class:`Rounds` waits for the final rounds' ``Timed``, with the rounds' ``setup``;
- :class:`Verifying` waits for the verification's ``Timed``, with its ``plan`` (whose
  selection is the pick being verified);
- :class:`Finished` waits for nothing: the ``selection`` (or the error) and the
  ``verification`` that shaped it, the ``Done`` the session gave.

Each phase's ``name`` is the short word logs and records show (``prebuild``,
``baseline``, ``sweep``, ``widen``, ``swept``, ``rounds``, ``verify``, ``done``).

>>> from returns.result import Failure
>>> Sweeping(2).name, Finished(Failure(TuneError("none"))).name
('sweep', 'done')
>>> Sweeping(2) == Sweeping(2), Sweeping(2) == Widening(2)
(True, False)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from returns.result import Result

from aitune_fp.core.records import Selection, TuneError
from aitune_fp.core.rounds.final_rounds import RoundsSetup
from aitune_fp.core.session.verify_plan import VerifyPlan
from aitune_fp.core.verification.judge import Verification


@dataclass(frozen=True, slots=True)
class Prebuilding:
    """The builds ahead run; nothing is timed until they end."""

    name: ClassVar[str] = "prebuild"


@dataclass(frozen=True, slots=True)
class Baseline:
    """The baseline is built and profiled (or only made, when its profile is reused)."""

    name: ClassVar[str] = "baseline"


@dataclass(frozen=True, slots=True)
class Sweeping:
    """Candidate number ``pending`` (in the plan's order) is built and profiled."""

    pending: int
    name: ClassVar[str] = "sweep"


@dataclass(frozen=True, slots=True)
class Widening:
    """Candidate number ``pending``, a contender of the race, is measured again at the
    ladder's larger batch sizes."""

    pending: int
    name: ClassVar[str] = "widen"


@dataclass(frozen=True, slots=True)
class Swept:
    """The sweep is over; the rounds, the verification or the end follow at once."""

    name: ClassVar[str] = "swept"


@dataclass(frozen=True, slots=True)
class Rounds:
    """The final rounds run, as ``setup`` says (who, at which batch size, the plan)."""

    setup: RoundsSetup
    name: ClassVar[str] = "rounds"


@dataclass(frozen=True, slots=True)
class Verifying:
    """The pick (``plan.selection``) is re-measured against its challengers."""

    plan: VerifyPlan
    name: ClassVar[str] = "verify"


@dataclass(frozen=True, slots=True)
class Finished:
    """The session is over: the selection or the error, and the verification (if any)."""

    selection: Result[Selection, TuneError]
    verification: Verification | None = None
    name: ClassVar[str] = "done"


Phase = Prebuilding | Baseline | Sweeping | Widening | Swept | Rounds | Verifying | Finished
"""Every phase a session can be in (see the module's rules)."""

BUILDING: tuple[type[Phase], ...] = (Prebuilding, Baseline, Sweeping, Widening, Swept)
"""The phases of the candidates (the builds ahead and the sweep), before anything is
timed in the interpreter's own process."""

__all__ = [
    "BUILDING",
    "Baseline",
    "Finished",
    "Phase",
    "Prebuilding",
    "Rounds",
    "Sweeping",
    "Swept",
    "Verifying",
    "Widening",
]
