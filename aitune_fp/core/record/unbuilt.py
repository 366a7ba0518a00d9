"""Candidates the run refused before building them, as rows of the record (pure).

Rules:
- a candidate the strategy does not admit, or a variant pruned by the session
  (:mod:`aitune_fp.core.session.pruning`), is never built: the session folds it in as a
  ``measure`` failure; the record keeps it as a failure row with that reason, so the
  table, the report and ``reselect`` (which refolds it as the same failure) show it;
- such a row has the candidate's name, its kind (the name up to ``(`` or ``#``: a
  description is ``kind(field=value, …)``), no key and no config (nothing was built), and
  no stage times;
- a candidate the run never reached (the strategy settled first: ``first_wins``,
  ``one_backend``) is, once the run has ended, a ``not run`` row (no profile, no failure,
  left out of ``reselect``'s candidates); a record written while the run goes on has no
  row for a candidate not reached yet;
- the record's candidates come in the plan's order: each name's built outcome, else its
  refusal, else (ended) its ``not run`` row; a built outcome whose name is not in the
  plan keeps its place after them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pyrsistent import pmap

from aitune_fp.core.record.run_record import BackendOutcome
from aitune_fp.core.records import BackendFailure


def kind_of(name: str) -> str:
    """The backend kind a candidate's description names.

    >>> kind_of("onnxruntime(precision='int8-dynamic')"), kind_of("inductor#2")
    ('onnxruntime', 'inductor')
    """
    return name.split("(", 1)[0].split("#", 1)[0]


def unbuilt_outcome(failure: BackendFailure) -> BackendOutcome:
    """The failure row of a candidate refused before it was built.

    >>> why = "not built: its base onnxruntime is 5.12× behind inductor"
    >>> name = "onnxruntime(precision='int8-dynamic')"
    >>> row = unbuilt_outcome(BackendFailure(name, "measure", why))
    >>> row.kind, row.status, row.failure.stage
    ('onnxruntime', 'failed', 'measure')
    """
    return BackendOutcome(failure.backend, kind_of(failure.backend), "", pmap(), failure=failure)


def with_unbuilt(
    built: Sequence[BackendOutcome],
    names: Sequence[str],
    refused: Iterable[BackendFailure],
    ended: bool = False,
) -> tuple[BackendOutcome, ...]:
    """``built`` with a failure row for each of ``names`` refused before it was built, in
    the plan's order (see the module's rules).

    >>> from aitune_fp.core.records import Profile
    >>> ort = BackendOutcome("ort", "ort", "k", {}, profile=Profile("ort", {1: [1.0]}))
    >>> skip = BackendFailure("trt", "measure", "not admitted by one_backend(min_latency)")
    >>> [o.backend for o in with_unbuilt((ort,), ("trt", "ort", "later"), (skip,))]
    ['trt', 'ort']
    >>> [o.status for o in with_unbuilt((ort,), ("trt", "ort", "later"), (skip,), ended=True)]
    ['failed', 'profiled', 'not run']
    """
    by_name = {o.backend: o for o in built}
    for failure in refused:
        if failure.backend in names and failure.backend not in by_name:
            by_name[failure.backend] = unbuilt_outcome(failure)
    if ended:
        for name in names:
            by_name.setdefault(name, BackendOutcome(name, kind_of(name), "", pmap()))
    planned = tuple(by_name[n] for n in names if n in by_name)
    return (*planned, *(o for o in built if o.backend not in set(names)))
