"""The interpreter: carry out the session's commands with the effect layer, decide nothing.

Rules:
- :func:`drive` runs the pure session (:mod:`aitune_fp.core.session`) with the one
  loop (:func:`~aitune_fp.core.session.run.run`), carrying out its commands in order;
  each measuring command is answered by one event fed back to ``step``; the loop ends at
  ``Done``. One interpreter for in-process and isolated
  candidates (:mod:`aitune_fp.shell.building` builds either way);
- ``Build``: the backend built from the config the driver was given under its name (the
  baseline's too: the plan names it), validated and profiled with the early stop it
  carries (the baseline with none; a reused baseline only gets a runner); its runner, when it
  has one, joins the live ones, its config is kept for the tuned module, and its
  ``Profiled`` carries every fact the record keeps of it
  (:func:`~aitune_fp.shell.recording.facts_of`); a ``Build`` with ``batch_sizes``
  profiles those instead of the setup's ladder; ``Close``: the named runners released;
  ``Say``: its
  note's line (:func:`~aitune_fp.core.report.notes.render`), at its level;
- after each step (before the next command is carried out) ``journal`` is told the run
  (:class:`~aitune_fp.shell.journal.Recorder` writes the record derived from the session,
  the one place ``run.json`` is written), then a backend just built is shown as done
  from its row: a row the user saw is always in the partial ``run.json``;
- ``TimeRounds`` and ``Verify`` run here, in this process, under the call deadline:
  each participant's runner made here from its worker's artifact (one that cannot be
  made is simply not timed: the ``Timed`` says why it left, and the session says so),
  then timed until the command's judge stops; the answer is a ``Timed`` with the samples;
- ``Prebuild``: the candidates built ahead in workers, several at once, and nothing else
  until all have ended (:mod:`aitune_fp.shell.prebuild`), answered by a ``Prebuilt``;
  :func:`drive` first tells the session what it can build ahead
  (:func:`~aitune_fp.shell.prebuild.capable`), and ``phase("prebuild")`` when the
  session leaves its ``Prebuilding`` phase;
- ``phase(name)`` is told, from the session's phase changes
  (:func:`~aitune_fp.core.session.run.moved`), when the run leaves the candidates (before
  anything runs here), the final rounds and the verification, for the wall account.

Longer than 260 lines: the interpreter is one match over the session's commands, each case
short.
"""

from __future__ import annotations

import dataclasses
import gc
import logging
from collections.abc import Callable, Collection, Iterable, Mapping

from pyrsistent import PMap, pmap
from returns.io import IOSuccess
from returns.result import Failure

from aitune_fp.core.record.derive import built_rows
from aitune_fp.core.records import Profile
from aitune_fp.core.report.notes import render
from aitune_fp.core.session import (
    Build,
    Close,
    Command,
    Event,
    Prebuild,
    Profiled,
    Say,
    Session,
    SessionPlan,
    Timed,
    TimeRounds,
    Verify,
)
from aitune_fp.core.session.baseline import refused
from aitune_fp.core.session.phase import Finished, Phase, Prebuilding, Rounds, Verifying
from aitune_fp.core.session.run import moved, run
from aitune_fp.effects.backends.base import Backend, Built
from aitune_fp.effects.candidate import CandidateRun
from aitune_fp.effects.isolation import materialize
from aitune_fp.effects.measure.call_guard import call_deadline
from aitune_fp.effects.measure.interleave import Interleaved
from aitune_fp.effects.measure.rounds import time_paired, time_rounds
from aitune_fp.shell import building
from aitune_fp.shell.io import perform
from aitune_fp.shell.prebuild import capable, prebuilt
from aitune_fp.shell.recording import facts_of
from aitune_fp.shell.setup import RunState, Setup, as_result

log = logging.getLogger("aitune_fp")

Runners = Mapping[str, Callable[..., object]]
LOCAL_PHASES = ("candidates", "final_rounds", "verification")
REACHED = {Rounds: 1, Verifying: 2, Finished: 3}
"""How many of :data:`LOCAL_PHASES` a session in each phase has left behind."""


def _no_phase(_name: str) -> None:
    return None


def _no_journal(_run: RunState) -> None:
    return None


def drive(
    setup: Setup,
    plan: SessionPlan,
    backends: Mapping[str, Backend],
    phase: Callable[[str], None] = _no_phase,
    journal: Callable[[RunState], None] = _no_journal,
) -> RunState:
    """Carry out ``plan``'s session to its end with the one loop
    (:func:`~aitune_fp.core.session.run.run`); the run, its session and ``Done``.
    ``backends`` holds every config by name, the baseline's under ``plan.baseline``
    (a plan whose baseline it lacks is refused: :mod:`aitune_fp.core.session.baseline`);
    ``journal`` is told the run after each step (see the module's rules)."""
    unknown = refused(plan, backends.keys())
    if unknown is not None:
        return RunState(session=unknown[0], done=unknown[1])
    shell = _Interpreter(setup, backends, phase, journal)
    session, done = run(capable(setup, plan, backends), shell.answer, shell.watch)
    return dataclasses.replace(shell.run, session=session, done=done)


class _Interpreter:
    """The run so far, carried from one command to the next (the shell's one mutable
    place); the phases left behind, told to ``phase`` as the session changes phase; how
    many events the last record journaled knew (none before the first step: the run's
    first record is written before it starts, :meth:`~aitune_fp.shell.journal.Recorder.begin`)."""

    def __init__(
        self,
        setup: Setup,
        backends: Mapping[str, Backend],
        phase: Callable[[str], None],
        journal: Callable[[RunState], None],
    ) -> None:
        self.setup, self.backends, self.phase, self.journal = setup, backends, phase, journal
        self.run = RunState()
        self.seen: Phase | None = None
        self.left = list(LOCAL_PHASES)
        self.written = 0

    def watch(self, session: Session, command: Command) -> None:
        """Keep the session as it stands; after a step, journal it and show a backend
        just built as done; lap the phases it has left."""
        self.run = dataclasses.replace(self.run, session=session)
        if len(session.events) != self.written:
            self.written = len(session.events)
            journaled(self.setup, self.run, self.journal)
        if not moved(self.seen, session, command):
            return
        if isinstance(self.seen, Prebuilding):
            self.phase("prebuild")
        self.seen = session.phase
        _leave_phases(self.left, REACHED.get(type(session.phase), 0), self.phase)

    def answer(self, command: Command) -> Event | None:
        """Carry out one command; its answer when it measures."""
        self.run, event = carry_out(self.setup, self.run, command, self.backends)
        return event


def _leave_phases(left: list[str], reached: int, phase: Callable[[str], None]) -> None:
    """Tell ``phase`` of every phase left behind (each once, in order)."""
    while left and LOCAL_PHASES.index(left[0]) < reached:
        name = left.pop(0)
        if name == "candidates":
            gc.collect()
        phase(name)


def carry_out(
    setup: Setup, run: RunState, command: Command, backends: Mapping[str, Backend]
) -> tuple[RunState, Event | None]:
    """One command carried out: the run after it, and the answer when it measures."""
    match command:
        case Build():
            return _build(setup, run, command, backends)
        case Prebuild():
            return run, prebuilt(setup, command, backends)
        case Close(names):
            kept = close_all_but(run.live, run.live.keys() - names)
            return dataclasses.replace(run, live=kept), None
        case Say(note):
            (log.warning if note.level == "warning" else log.info)("%s", render(note))
            return run, None
        case TimeRounds() | Verify():
            return run, _timed(setup, run, command)
    raise TypeError(f"not a command to carry out: {command!r}")  # pragma: no cover


def _timed(setup: Setup, run: RunState, command: TimeRounds | Verify) -> Timed:
    """Final rounds or a verification timed here, under the call deadline, by the
    runners made here (who could not be made is told to the session, not timed)."""
    rounds = isinstance(command, TimeRounds)
    setup.emit("stage", stage="final rounds" if rounds else "verification", done=shown(run))
    runners, left = _made(run.live, command.backends)
    with call_deadline(setup.timeouts.call):
        if isinstance(command, TimeRounds):
            timed = _time_rounds(setup, runners, command)
        else:
            timed = _verify(setup, runners, command)
    return as_timed("rounds" if rounds else "verify", timed, left)


def as_timed(purpose: str, timed: Interleaved, left: Mapping[str, str] | None = None) -> Timed:
    """The session's answer to a timing: the samples by participant, how it ended, who
    left before being timed and why."""
    return Timed(
        purpose, pmap(timed.samples), timed.rounds, timed.reason, timed.seconds, pmap(left or {})
    )


def _time_rounds(setup: Setup, runners: Runners, command: TimeRounds) -> Interleaved:
    """The final rounds' participants made here, timed until the judge stops."""
    who = [(n, runners[n], bs) for n, bs in command.participants if n in runners]
    r = setup.request
    return time_rounds(who, r.samples, r.device, command.plan, command.judge, r.settings)


def _verify(setup: Setup, runners: Runners, command: Verify) -> Interleaved:
    """The verification's entries made here, warmed and timed until the judge stops."""
    who = [(k, runners[b], bs) for k, b, bs in command.entries if b in runners]
    r, warmup = setup.request, command.seconds
    return time_paired(
        who, r.samples, r.device, command.plan, command.judge, r.settings, warmup_of=warmup
    )


def _build(
    setup: Setup, run: RunState, command: Build, backends: Mapping[str, Backend]
) -> tuple[RunState, Event]:
    """Build (or, for a reused baseline, only make the runner of) one backend."""
    name, done = command.name, shown(run)
    backend = backends[name]
    if command.batch_sizes:
        setup = setup.swept(command.batch_sizes)
    if command.reuse is not None:
        made = _reused(setup, backend, name, command.reuse)
    else:
        log.info("building %s", name)
        setup.emit("backend_start", name, done)
        make = building.isolated if setup.isolation else building.in_process
        made = make(setup, done, backend, name, command.early_stop)
    if made.built is not None and name in run.live:  # a widening's runner replaces the race's
        run.live[name].close()
    live = run.live.set(name, made.built) if made.built is not None else run.live
    seconds = 0.0 if command.reuse is not None else made.stage_seconds.get("profile", 0.0)
    event = Profiled(name, as_result(made), made.built is not None, seconds, facts_of(made))
    configs = run.configs if name in run.configs else run.configs.set(name, backend)
    return dataclasses.replace(run, live=live, configs=configs), event


def shown(run: RunState) -> int:
    """How many backends the run has shown built so far (its record's rows)."""
    return len(built_rows(run.session)) if run.session is not None else 0


def journaled(setup: Setup, run: RunState, journal: Callable[[RunState], None]) -> None:
    """``run`` journaled (the record on disk), then the backend its last step built
    shown as done, from its row."""
    journal(run)
    session = run.session
    last = session.events[-1] if session is not None and session.events else None
    if session is None or not isinstance(last, Profiled):
        return
    rows = built_rows(session)
    row = next(r for r in reversed(rows) if r.backend == last.name)
    building.log_outcome(setup, len(rows), row)


def _reused(setup: Setup, config: Backend, name: str, profile: Profile) -> CandidateRun:
    """A reused baseline: its profile from the earlier run, a fresh runner made here."""
    folder = building.work_dir(setup, config, name)
    setup.emit("backend_start", name, 0)
    built = perform(
        config.build(setup.request.module, setup.request.samples, setup.request.device, folder)
    )
    return CandidateRun(config, name, built.value_or(None), IOSuccess(profile), work_dir=folder)


def _made(live: Mapping[str, Built], wanted: Iterable[str]) -> tuple[Runners, dict[str, str]]:
    """The runners of ``wanted`` made in this process, and why each that could not be
    made was not (the session says it leaves)."""
    runners: dict[str, Callable[..., object]] = {}
    left: dict[str, str] = {}
    for name in dict.fromkeys(wanted):
        made = perform(materialize(live[name])) if name in live else Failure("no live runner")
        if isinstance(made, Failure):
            left[name] = str(made.failure())
        else:
            runners[name] = made.unwrap().runner
    return runners, left


def close_all_but(live: Mapping[str, Built], keep: Collection[str]) -> PMap[str, Built]:
    """Close every live runner not named in ``keep``; the ones kept, as a new map."""
    for name, built in live.items():
        if name not in keep:
            built.close()
    return pmap({name: built for name, built in live.items() if name in keep})
