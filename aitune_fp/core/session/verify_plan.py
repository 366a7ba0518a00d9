"""Who a verification times and how its samples are judged (pure).

Rules (the decisions :mod:`aitune_fp.core.verification.verification_plan` states, gathered
for one selection): the challengers are the selection's closest runner-ups that still
have a runner, the second only while the sweeps leave it unsettled, and the baseline
whenever it has a runner (so the speedup is measured in the verification too); under a throughput
metric the winner also takes part at other batch sizes of its sweep (``backend@batch``),
which count only when the strategy admits them on their samples; no verification when
the winner has no runner or nobody is left to challenge it. The judge is the core's
(:func:`~aitune_fp.core.verification.judge.judge`) on the samples so far; the rule that
stops the timing on evidence or on its budget is the command's judge
(:class:`~aitune_fp.core.session.judges.VerifyJudge`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from pyrsistent import PMap, pmap

from aitune_fp.core.records import BackendProfilingResult, Profile, Selection
from aitune_fp.core.rounds.rounds_plan import RoundsPlan
from aitune_fp.core.session.notes import VerificationPlanned
from aitune_fp.core.strategy import Strategy
from aitune_fp.core.verification.judge import Paired, Verification, judge
from aitune_fp.core.verification.verification_plan import (
    CHALLENGERS,
    EXTEND,
    admits,
    at_batch_size,
    challengers,
    plateau,
    timing_plan,
    unsettled,
)


@dataclass(frozen=True, slots=True)
class VerifyPlan:
    """One verification: the winner at its batch size, the challengers by name, the
    winner's other batch sizes by label, the entries timed (key, backend, batch size)."""

    strategy: Strategy
    selection: Selection
    seconds: float
    names: tuple[str, ...]
    labels: PMap[str, int]
    entries: tuple[tuple[str, str, int], ...]
    profile: Profile | None
    plan: RoundsPlan

    @property
    def winner(self) -> str:
        """The backend the selection picked."""
        return self.selection.backend

    @property
    def kind(self) -> str:
        """The strategy's metric kind (``latency`` when it names none)."""
        return self.strategy.metric.kind or "latency"

    def planned(self) -> VerificationPlanned:
        """The note that opens the verification."""
        size = self.selection.result.selected_batch_size
        return VerificationPlanned(self.winner, size, (*self.names, *self.labels), self.seconds)


def plan_verification(
    strategy: Strategy,
    selection: Selection,
    seconds: float,
    live: Collection[str],
    profile: Profile | None,
) -> VerifyPlan | None:
    """The verification of ``selection`` among the ``live`` runners, or ``None`` when the
    winner or everyone it could be checked against has no runner; ``profile`` is the
    winner's (its sweep's other batch sizes may challenge it under a throughput metric)."""
    ups = [n for n in challengers(strategy, selection, CHALLENGERS) if n in live]
    names = with_baseline(selection, tuple(unsettled(strategy, selection, ups)), live)
    winner, size = selection.backend, selection.result.selected_batch_size
    kind = strategy.metric.kind or "latency"
    mine = profile if kind != "latency" else None
    neighbours = plateau(strategy, mine, size) if mine is not None else ()
    if winner not in live or not (names or neighbours):
        return None
    labels = {f"{winner}@{bs}": bs for bs in neighbours}
    entries = _entries(selection, names, labels)
    plan = timing_plan(seconds, EXTEND)
    return VerifyPlan(strategy, selection, seconds, names, pmap(labels), entries, mine, plan)


def with_baseline(
    selection: Selection, names: tuple[str, ...], live: Collection[str]
) -> tuple[str, ...]:
    """``names`` and the baseline, when it has a runner and is neither the winner nor
    already named: the pick's speedup over the baseline is then measured in the same
    paired rounds as the verdict, so the report's speedup rests on the verification too."""
    base = selection.baseline
    if base is None or base.backend == selection.backend or base.backend in names:
        return names
    return (*names, base.backend) if base.backend in live else names


def _entries(
    selection: Selection, names: Sequence[str], labels: Mapping[str, int]
) -> tuple[tuple[str, str, int], ...]:
    """(key, backend, batch size) for the winner, each challenger at its selected batch
    size, and the winner at each other batch size by label."""
    sizes = {s.backend: s.result.selected_batch_size for s in selection.ranking}
    if selection.baseline is not None:
        sizes[selection.baseline.backend] = selection.baseline.result.selected_batch_size
    winner = selection.backend
    sizes[winner] = selection.result.selected_batch_size
    timed = tuple((n, n, sizes[n]) for n in (winner, *names))
    return timed + tuple((k, winner, bs) for k, bs in labels.items())


def judged(
    vp: VerifyPlan, so_far: Mapping[str, Sequence[float]], elapsed: float
) -> Verification | None:
    """The core's judgement of the samples so far (``None``: fewer than two to judge)."""
    got = {
        key: Paired(backend, bs, tuple(so_far[key]), "" if key == backend else key)
        for key, backend, bs in vp.entries
        if so_far.get(key)
    }
    near = [got[k] for k in vp.labels if k in got and admits(vp.strategy, got[k])]
    others = (*(got[n] for n in vp.names if n in got), *near)
    if vp.winner not in got or not others:
        return None
    budget = (vp.seconds, vp.plan.max_seconds)
    return judge(got[vp.winner], others, vp.kind, seconds=elapsed, budget=budget)


def alternatives(vp: VerifyPlan) -> dict[tuple[str, int], BackendProfilingResult | None]:
    """The strategy's results for the winner at each other batch size that took part."""
    if vp.profile is None:
        return {}
    profile = vp.profile
    return {(vp.winner, bs): at_batch_size(vp.strategy, profile, bs) for bs in vp.labels.values()}
