"""The fleet index, resume decisions and progress counts as pure values."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aitune_fp.core.fleet import Plan, expand
from aitune_fp.core.fleet.index import (
    FleetIndex,
    JobEntry,
    decode_index,
    encode_index,
    not_finished,
    with_entry,
)
from aitune_fp.core.fleet.plan import STATUSES, entry_key
from aitune_fp.core.fleet.progress import JobEvent, start_progress, step_progress
from aitune_fp.core.fleet.resume import resume, same_environment
from tests.core.fleet_plans import plans


@given(plans(), st.lists(st.sampled_from(STATUSES)))
def test_index_round_trips_through_json(plan: Plan, statuses: list[str]) -> None:
    """decode_index(encode_index(index)) is the index, whatever the statuses."""
    entries = [not_finished(j) for j in expand(plan)]
    for i, status in enumerate(statuses[: len(entries)]):
        entries[i] = dataclasses.replace(entries[i], status=status, attempts=i, seconds=i / 3)
    index = FleetIndex(tuple(entries), "plan text", "ray")
    assert decode_index(encode_index(index)) == index


def test_decode_names_the_bad_field() -> None:
    """A damaged entry's error names its path and the field."""
    doc = encode_index(FleetIndex((JobEntry("j", "m", "t", "s", "cpu", "complete", "k"),)))
    doc["jobs"][0]["status"] = "done"
    with pytest.raises(ValueError, match=r"fleet index.jobs\[0\]: status must be one of"):
        decode_index(doc)
    doc["jobs"][0]["attempts"] = "1"
    with pytest.raises(ValueError, match=r"jobs\[0\]\.attempts: expected int"):
        decode_index(doc)


@given(plans())
def test_unfinished_entries_claim_nothing(plan: Plan) -> None:
    """Before a job finishes its entry is interrupted, with no run and no attempts."""
    for job in expand(plan):
        entry = not_finished(job)
        assert (entry.status, entry.run, entry.attempts) == ("interrupted", None, 0)
        assert entry.entry_key == entry_key(job) and entry.job == job.job_id


def test_with_entry_replaces_in_place() -> None:
    """Replacing an entry keeps the order; a new job is appended."""
    a, b = (JobEntry(j, "m", "t", "s", "cpu", "interrupted", "k") for j in ("a", "b"))
    index = with_entry(FleetIndex((a, b)), dataclasses.replace(a, status="complete"))
    assert [(e.job, e.status) for e in index.entries] == [("a", "complete"), ("b", "interrupted")]
    grown = with_entry(index, dataclasses.replace(a, job="c"))
    assert [e.job for e in grown.entries] == list("abc")


ENTRY = JobEntry("m/cpu/s", "m", "cpu", "s", "cpu", "complete", "k1", "m/cpu/s/run.json")


@pytest.mark.parametrize(
    ("previous", "key", "complete", "force", "action"),
    [
        (ENTRY, "k1", True, False, "check"),
        (dataclasses.replace(ENTRY, status="skipped"), "k1", True, False, "check"),
        (ENTRY, "k1", True, True, "run"),
        (ENTRY, "k2", True, False, "run"),
        (ENTRY, "k1", False, False, "run"),
        (dataclasses.replace(ENTRY, status="failed"), "k1", True, False, "run"),
        (dataclasses.replace(ENTRY, status="interrupted"), "k1", True, False, "run"),
        (None, "k1", True, False, "run"),
    ],
)
def test_resume_keeps_only_complete_runs_of_the_same_entry(
    previous: JobEntry | None, key: str, complete: bool, force: bool, action: str
) -> None:
    """Only a complete run of the same entry, not forced, may be kept (after an env check)."""
    assert resume(key, previous, run_complete=complete, force=force).action == action


@given(st.dictionaries(st.sampled_from(["torch", "cpu", "gpu", "device"]), st.text(max_size=3)))
def test_environment_comparison_ignores_only_the_device_spelling(env: dict[str, str]) -> None:
    """A fingerprint equals itself with any device; any other changed fact differs."""
    assert same_environment(env, {**env, "device": "cuda:0"})
    assert not same_environment(env, {**env, "torch": env.get("torch", "") + "x"})


@given(plans(), st.data())
def test_progress_counts_stay_within_the_totals(plan: Plan, data: st.DataObject) -> None:
    """Any order of start/finish events keeps every count within its target's total."""
    jobs = expand(plan)
    progress = start_progress(jobs)
    assert sum(c.total for c in progress) == len(jobs)
    for job in data.draw(st.permutations(jobs)):
        progress = step_progress(progress, JobEvent("started", job.job_id, job.target.label))
        status = data.draw(st.sampled_from(STATUSES))
        event = JobEvent("finished", job.job_id, job.target.label, status)
        progress = step_progress(progress, event)
        for counts in progress:
            assert counts.waiting >= 0 and min(counts.running, counts.done, counts.failed) >= 0
    assert all(c.waiting == 0 and c.running == 0 for c in progress)
