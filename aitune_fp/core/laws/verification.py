"""Verification laws: the re-measured pick changes (backend or batch size alike) only on a
significant, paired loss beyond the margin, says "clear" only of decided intervals, and
does not depend on the order of its challengers.

Every law here takes ``(winner, others, kind)``: the winner's and the challengers'
paired samples (:class:`~aitune_fp.core.verification.judge.Paired`) and the metric kind
(``latency`` or ``throughput``), judged by :func:`~aitune_fp.core.verification.judge.judge`
with its defaults.
"""

from __future__ import annotations

from dataclasses import replace

from aitune_fp.core.laws.law import Law, implies
from aitune_fp.core.stats.evidence import verdict
from aitune_fp.core.verification.judge import MARGIN, MIN_ROUNDS, Paired, costs, judge

Others = tuple[Paired, ...]


def _rounds(winner: Paired, others: Others) -> int:
    return min(len(p.samples_ms) for p in (winner, *others))


def _selected_is_a_participant(winner: Paired, others: Others, kind: str) -> bool:
    v = judge(winner, others, kind, seconds=1.0)
    return v.selected in {winner.backend, *(o.backend for o in others)}


def _holds_iff_unchanged(winner: Paired, others: Others, kind: str) -> bool:
    v = judge(winner, others, kind, seconds=1.0)
    return v.holds == ((v.selected, v.selected_batch_size) == (winner.backend, winner.batch_size))


def _interval_contains_point(winner: Paired, others: Others, kind: str) -> bool:
    v = judge(winner, others, kind, seconds=1.0)
    return all(c.ci95[0] <= c.speedup <= c.ci95[1] for c in v.comparisons) and (
        v.ci95[0] <= v.speedup <= v.ci95[1]
    )


def _change_is_significant(winner: Paired, others: Others, kind: str) -> bool:
    """The same rule for another backend and another batch size: a changed pick (either)
    beats the original beyond the margin with 95 % confidence, after enough rounds."""
    v = judge(winner, others, kind, seconds=1.0)
    return implies(not v.holds, v.ci95[1] < 1.0 / (1.0 + MARGIN) and v.rounds >= MIN_ROUNDS)


def _no_loss_holds(winner: Paired, others: Others, kind: str) -> bool:
    """Equivalent or undecided comparisons never move the pick: the earlier one keeps it."""
    v = judge(winner, others, kind, seconds=1.0)
    return implies(all(c.verdict != "loss" for c in v.comparisons), v.holds)


def _clear_is_decided(winner: Paired, others: Others, kind: str) -> bool:
    """ "clear" is said only when every interval of the verified pick lies beyond the margin
    or within it: never of an interval that straddles one."""
    v = judge(winner, others, kind, seconds=1.0)
    standing = v.standing or v.comparisons
    decided = all(verdict(*c.ci95, MARGIN) in ("win", "equivalent") for c in standing)
    return implies(v.outcome == "clear" or ": clear:" in v.reason, decided)


def _order_invariant(winner: Paired, others: Others, kind: str) -> bool:
    """Listing the challengers in another order changes nothing."""
    return judge(winner, others, kind, seconds=1.0) == judge(
        winner, tuple(reversed(others)), kind, seconds=1.0
    )


def _few_rounds_hold(winner: Paired, others: Others, kind: str) -> bool:
    return implies(
        _rounds(winner, others) < MIN_ROUNDS, judge(winner, others, kind, seconds=1.0).holds
    )


def _itself_holds(winner: Paired, others: Others, kind: str) -> bool:
    twins = tuple(replace(winner, backend=f"{winner.backend}-twin{i}") for i in range(len(others)))
    return judge(winner, twins, kind, seconds=1.0).holds


def _dominated_winner_loses(winner: Paired, others: Others, kind: str) -> bool:
    """A challenger cheaper than the winner by over 3× the margin in every round wins."""
    n = _rounds(winner, others)
    w, c = costs(winner, kind)[:n], costs(others[0], kind)[:n]
    cheaper = all(b * (1.0 + 3 * MARGIN) < a for a, b in zip(w, c, strict=True))
    dominated = n >= MIN_ROUNDS and cheaper
    return implies(dominated, not judge(winner, others, kind, seconds=1.0).holds)


def _faster_winner_still_holds(winner: Paired, others: Others, kind: str) -> bool:
    """Making the winner twice as fast in every round never overturns a pick that held."""
    held = judge(winner, others, kind, seconds=1.0).holds
    faster = replace(winner, samples_ms=tuple(ms / 2.0 for ms in winner.samples_ms))
    return implies(held, judge(faster, others, kind, seconds=1.0).holds)


def _deterministic(winner: Paired, others: Others, kind: str) -> bool:
    return judge(winner, others, kind, seconds=1.0) == judge(winner, others, kind, seconds=1.0)


VERIFICATION_LAWS: tuple[Law[[Paired, Others, str]], ...] = (
    Law(
        "verification_selects_a_participant",
        "the verified pick is the winner or one of its challengers",
        _selected_is_a_participant,
    ),
    Law(
        "verification_holds_iff_unchanged",
        "the decision holds exactly when the verified pick is the winner",
        _holds_iff_unchanged,
    ),
    Law(
        "verification_interval_contains_point",
        "every comparison's 95 % interval contains its speedup",
        _interval_contains_point,
    ),
    Law(
        "verification_changes_only_significantly",
        "a pick changes (backend or batch size alike) only with enough rounds and an interval "
        "wholly below the margin",
        _change_is_significant,
    ),
    Law(
        "verification_no_loss_holds",
        "without a challenger beyond the margin (equivalent or undecided), the pick holds",
        _no_loss_holds,
    ),
    Law(
        "verification_clear_is_decided",
        "the verification says clear only when every interval is beyond or within the margin",
        _clear_is_decided,
    ),
    Law(
        "verification_order_invariant",
        "the verification does not depend on the order the challengers are listed in",
        _order_invariant,
    ),
    Law(
        "verification_few_rounds_hold",
        "with fewer than the minimum paired rounds the pick holds",
        _few_rounds_hold,
    ),
    Law(
        "verification_itself_holds",
        "a winner verified against copies of its own samples holds",
        _itself_holds,
    ),
    Law(
        "verification_dominated_winner_loses",
        "a challenger cheaper in every one of enough rounds by over 3× the margin overturns",
        _dominated_winner_loses,
    ),
    Law(
        "verification_faster_winner_holds",
        "a pick that held still holds when the winner is made twice as fast",
        _faster_winner_still_holds,
    ),
    Law(
        "verification_deterministic",
        "the same samples give the same verification",
        _deterministic,
    ),
)
