"""The tune as a pure session: the core decides every step, an interpreter carries it out.

``start(plan) -> (session, commands)`` and ``step(session, event) -> (session,
commands)``: every decision of a tune (which candidate to build next and with which
early stop, whose runner to release, whether and whom to time in final rounds, what to
verify, the selection, which builds run ahead while nothing is timed, the baseline's
config by name, who left a timing, whether the winner can still run) is made here, as
data. The shell's interpreter
(:mod:`aitune_fp.shell.drive`) carries out the commands with the effect layer and feeds
back their results; :func:`run` drives a session with any answering function (a fake
device, recorded profiles); :func:`~aitune_fp.core.session.replay.replay` re-derives a
recorded run from its event log.
"""

from aitune_fp.core.session.commands import (
    Build,
    Close,
    Command,
    Done,
    Prebuild,
    Say,
    TimeRounds,
    Verify,
)
from aitune_fp.core.session.events import Event, Prebuilt, Profiled, Timed
from aitune_fp.core.session.facts import BuildFacts
from aitune_fp.core.session.judges import Judge, Judging, NoJudge, RoundsJudge, VerifyJudge
from aitune_fp.core.session.phase import (
    Baseline,
    Finished,
    Phase,
    Prebuilding,
    Rounds,
    Sweeping,
    Swept,
    Verifying,
    Widening,
)
from aitune_fp.core.session.run import run
from aitune_fp.core.session.session import start, step
from aitune_fp.core.session.state import Session, SessionPlan

__all__ = [
    "Baseline",
    "Build",
    "BuildFacts",
    "Close",
    "Command",
    "Done",
    "Event",
    "Finished",
    "Judge",
    "Judging",
    "NoJudge",
    "Phase",
    "Prebuild",
    "Prebuilding",
    "Prebuilt",
    "Profiled",
    "Rounds",
    "RoundsJudge",
    "Say",
    "Session",
    "SessionPlan",
    "Sweeping",
    "Swept",
    "TimeRounds",
    "Timed",
    "Verify",
    "VerifyJudge",
    "Verifying",
    "Widening",
    "run",
    "start",
    "step",
]
