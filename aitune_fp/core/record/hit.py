"""A decision cache hit's record: the stored run whole, with the hit's re-verification (pure).

Rules:
- :func:`hit_record` is the stored run's record with every piece of its evidence as it was
  stored: its baseline, every candidate's outcome (sweeps, failures, accuracy figures),
  its selection, its strategy, its own ``verification``, its event log and its plan; so
  ``reselect``, ``replay`` and ``report`` answer on the hit's record as on the stored one;
- what the hit adds is marked as its own: ``reverification`` is the short run's
  verification of the stored pick against its runner-up (``None``: none ran),
  ``provenance.decision`` says it was a hit (the short run's line), ``wall`` is the hit's
  own account and ``status`` the hit's; the stored run's ``verification`` is never replaced.
"""

from __future__ import annotations

from dataclasses import replace

from aitune_fp.core.record.run_record import RunRecord


def hit_record(stored: RunRecord, short: RunRecord) -> RunRecord:
    """``stored`` with ``short``'s re-verification, decision line, wall and status (see the
    module's rules).

    >>> from aitune_fp.core.record.provenance import Provenance
    >>> stored = RunRecord("m", "cpu", {}, None, (), None, None, {}, {}, 8)
    >>> short = replace(stored, max_batch_size=1, provenance=Provenance(decision="hit"))
    >>> hit = hit_record(stored, short)
    >>> hit.max_batch_size, hit.provenance.decision, hit.reverification is None
    (8, 'hit', True)
    """
    said = replace(stored.provenance, decision=short.provenance.decision)
    return replace(
        stored,
        reverification=short.verification,
        provenance=said,
        wall=short.wall,
        status=short.status,
    )
