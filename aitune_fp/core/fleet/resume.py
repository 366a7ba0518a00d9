"""Resuming a plan: which jobs run again and which keep their stored run.

Rules:
- with ``force`` every job runs;
- a job keeps its stored run only when its previous entry is ``complete`` or ``skipped``,
  has the same entry key (the same plan entry), and its ``run.json`` is complete (readable
  and with a selection); even then the run is kept only if the environment where the job
  would run now has the same fingerprint as the stored run's (:func:`same_environment`),
  which only that environment can tell, so the decision is ``check``;
- everything else (no entry, failed, interrupted, another entry, a missing or unreadable
  run) runs again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from aitune_fp.core.fleet.index import JobEntry

# Fingerprint keys that name the device as the caller wrote it ("cuda" vs "cuda:0").
_NOT_COMPARED: Final = frozenset({"device"})


@dataclass(frozen=True, slots=True)
class Resume:
    """``run`` (tune again) or ``check`` (keep the stored run if the environment matches)."""

    action: Literal["run", "check"]
    reason: str


def resume(
    key: str, previous: JobEntry | None, *, run_complete: bool, force: bool = False
) -> Resume:
    """Whether a job runs again, by the rules above.

    >>> done = JobEntry("m/cpu/s", "m", "cpu", "s", "cpu", "complete", "k1", "m/cpu/s/run.json")
    >>> resume("k1", done, run_complete=True).action, resume("k2", done, run_complete=True).reason
    ('check', 'the plan entry changed')
    >>> resume("k1", done, run_complete=True, force=True).reason
    'forced'
    """
    if force:
        return Resume("run", "forced")
    if previous is None:
        return Resume("run", "not run before")
    if previous.status not in ("complete", "skipped"):
        return Resume("run", f"previously {previous.status}")
    if previous.entry_key != key:
        return Resume("run", "the plan entry changed")
    if not run_complete:
        return Resume("run", "its run.json is missing or incomplete")
    return Resume("check", "complete before")


def same_environment(stored: Mapping[str, Any], current: Mapping[str, Any]) -> bool:
    """Whether two environment fingerprints describe the same machine and libraries.

    >>> same_environment({"torch": "2.8", "device": "cuda"}, {"torch": "2.8", "device": "cuda:0"})
    True
    >>> same_environment({"torch": "2.8"}, {"torch": "2.9"})
    False
    """
    keys = (set(stored) | set(current)) - _NOT_COMPARED
    return all(stored.get(k) == current.get(k) for k in keys)
