"""The decision in words, from the run's decision account (pure).

Rules:
- ``Selected <backend> (batch size N): <label> <value>, measured in <where>``: the account's
  selected figure and where it was measured (the sweep; the final rounds, with their
  statistic and number of rounds; the verification, with its number of paired rounds);
- ``Speedup: <baseline> → <selected> (k×): <base@batch> → <pick@batch>, both measured in
  <source>``: the two figures of the account and their ratio, from one measurement;
- then, in order: the explicit line when the baseline was selected, the account's ``why``
  (a speedup below 1), a ``Why not`` line for each other candidate shown with a higher
  speedup than the pick in the same measurement (when the verification moved the pick
  and compared it with that candidate, the verification's figure, :mod:`.rival`),
  the line saying the sweep (or the final rounds) and the verification disagree beyond
  noise, and that the pick rests on the verification (:mod:`.gap`; a rival whose Why-not
  line already says so, comparing the sweep or the final rounds with the verification, is
  not repeated; a Why-not line from the verification's own figures says nothing of an
  earlier measurement, so its rival's gap is still stated), the selection's notes (the
  verification's line rendered with ``backend@batch``, :mod:`.verification_line`),
  where a reused baseline came from and, on a decision cache hit, that the figures are the
  stored run's and the hit's own re-verification (:func:`hit_lines`);
- a run without a selection says ``Tuning failed: <reason>`` (or that none was recorded).
"""

from __future__ import annotations

from aitune_fp.core.record.run_record import RunRecord
from aitune_fp.core.report.account import (
    DecisionAccount,
    decision_account,
    pair_of,
    participants,
)
from aitune_fp.core.report.formats import format_metric, format_speedup
from aitune_fp.core.report.gap import gap_line
from aitune_fp.core.report.rival import moved_rival_line
from aitune_fp.core.report.sources import ROUNDS, VERIFICATION, Figure, round_statistic
from aitune_fp.core.report.verification_line import shown_notes, verification_line


def where(record: RunRecord, f: Figure) -> str:
    """Where ``f`` was measured, in words.

    >>> r = RunRecord("m", "cpu", {}, None, (), None, None, {}, {}, None)
    >>> where(r, Figure("a", 1, 1.0, "verification", 10))
    'the verification (median of 10 paired rounds)'
    """
    if f.source == ROUNDS:
        return f"the final rounds ({round_statistic(record)} of {f.samples} rounds)"
    if f.source == VERIFICATION:
        return f"the verification (median of {f.samples} paired rounds)"
    return f"the {f.source}"


def selected_line(record: RunRecord, account: DecisionAccount) -> str:
    """``Selected <backend> (batch size N): <label> <value>, measured in <where>``."""
    sel = account.selected
    label = record.strategy.get("metric_label", "metric")
    return (
        f"Selected {sel.backend} (batch size {sel.batch_size}): {label} "
        f"{format_metric(record, sel.value)}, measured in {where(record, sel)}"
    )


def speedup_line(record: RunRecord, account: DecisionAccount) -> str | None:
    """The baseline's figure, the selected one and their ratio, or ``None`` without a
    baseline."""
    base, sel = account.baseline, account.selected
    if base is None:
        return None
    ratio = "" if account.speedup is None else f" ({format_speedup(account.speedup)})"
    head = f"Speedup: {format_metric(record, base.value)} → {format_metric(record, sel.value)}"
    if base == sel:
        return f"{head}{ratio}: the baseline {sel.at} itself"
    return f"{head}{ratio}: {base.at} → {sel.at}, both measured in the {sel.source}"


def decision_lines(record: RunRecord) -> tuple[str, ...]:
    """The decision in words: selected backend and metric, speedup, fallback, or the error.

    >>> r = RunRecord("m", "cpu", {}, None, (), None, None, {}, {}, None)
    >>> decision_lines(r)
    ('No selection was recorded.',)
    """
    sel, account = record.selection, decision_account(record)
    if sel is None or account is None:
        failed = f"Tuning failed: {record.error.message}" if record.error else None
        return (failed or "No selection was recorded.", *hit_lines(record))
    lines = [selected_line(record, account), speedup_line(record, account)]
    if sel.fell_back_to_baseline:
        lines.append(f"The baseline {sel.backend} was selected: no candidate was strictly better")
    lines.append(account.why)
    rivals = rival_lines(record, account)
    lines.extend(line for _, line, _ in rivals)
    earlier = account.selected.source != VERIFICATION  # a Why-not line compared an earlier one
    lines.append(gap_line(record, skip=[who for who, _, moved in rivals if moved and earlier]))
    notes = shown_notes(sel.notes, record.verification)
    shown = (*(line for line in lines if line is not None), *notes, *provenance_lines(record))
    return (*shown, *hit_lines(record))


def hit_lines(record: RunRecord) -> tuple[str, ...]:
    """A decision cache hit's lines: that the evidence above is the stored run's, and its
    own re-verification (``Re-verification (this run): …``); none for any other run.

    >>> from aitune_fp.core.record.provenance import Provenance
    >>> r = RunRecord("m", "cpu", {}, None, (), None, None, {}, {}, None,
    ...               provenance=Provenance(decision="decision cache hit (d/x.json): a"))
    >>> print(hit_lines(r)[0])
    This run is a decision cache hit (d/x.json): a; the figures above are the stored run's.
    """
    if not record.provenance.cache_hit:
        return ()
    head = f"This run is a {record.provenance.decision}; the figures above are the stored run's."
    again = record.reverification
    return (
        (head,)
        if again is None
        else (head, f"Re-verification (this run): {verification_line(again)}")
    )


def rival_lines(
    record: RunRecord, account: DecisionAccount
) -> tuple[tuple[tuple[str, int], str, bool], ...]:
    """One line per other scored candidate shown with a higher speedup than the pick, from
    the same measurement: why the higher figure did not win (with the rival it names, and
    whether the line gives the verification's figure that moved the pick)."""
    sel, found = record.selection, participants(record)
    if sel is None or found is None or account.speedup is None:
        return ()
    mine = account.selected
    lines = []
    for scored in sel.ranking:
        who = (scored.backend, scored.result.selected_batch_size)
        pair = pair_of(record, who, found[1]) if who != found[0] else None
        if pair is None or pair.speedup is None or pair.figure.source != mine.source:
            continue
        if pair.speedup > account.speedup:
            speedups = (pair.speedup, account.speedup)
            moved = moved_rival_line(record, pair.figure, mine, speedups)
            line = moved or _tie_line(pair.figure, mine, speedups)
            lines.append((who, line, moved is not None))
    return tuple(lines)


def _tie_line(rival: Figure, mine: Figure, speedups: tuple[float, float]) -> str:
    """The ``Why not`` line of a rival the strategy's rule did not judge faster."""
    return (
        f"Why not {rival.at}: shown faster than the pick {mine.at} "
        f"({format_speedup(speedups[0])} against {format_speedup(speedups[1])}, "
        f"both in the {mine.source}), it was not judged faster by the strategy's rule "
        "(a tie keeps the pick; see the lines below)."
    )


def provenance_lines(record: RunRecord) -> tuple[str, ...]:
    """Where the baseline came from, when it was not measured in this run or a reuse was
    refused (never silent: ``--reuse-baseline``).

    >>> from aitune_fp.core.record.provenance import Provenance
    >>> r = RunRecord("m", "cpu", {}, None, (), None, None, {}, {}, None,
    ...               provenance=Provenance(baseline_reused_from="old/run.json"))
    >>> provenance_lines(r)
    ('The eager baseline was reused from old/run.json (same model, inputs, plan and environment).',)
    """
    origin = record.provenance
    if origin.baseline_reused_from is not None:
        return (
            f"The eager baseline was reused from {origin.baseline_reused_from} "
            "(same model, inputs, plan and environment).",
        )
    if origin.baseline_refused is not None:
        return (origin.baseline_refused,)
    return ()
