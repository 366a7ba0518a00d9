"""Eager reference outputs in a cache entry: sealed, used on a hit for the same samples."""

from __future__ import annotations

import hashlib
import json
import logging
import queue
from pathlib import Path
from typing import Any

import pytest
import torch
from returns.io import IOSuccess
from returns.unsafe import unsafe_perform_io

from aitune_fp.core.strategies import max_throughput
from aitune_fp.effects.backends.base import Built
from aitune_fp.effects.build_request import BuildRequest, Candidate
from aitune_fp.effects.cache.reference import REFERENCE_FILE, cached_references
from aitune_fp.effects.candidate import CandidateRun, run_candidate
from aitune_fp.effects.checks.validate import ValidationReport, validate
from aitune_fp.effects.inputs.samples import Samples, normalise_samples
from aitune_fp.effects.measure.timing import ProfileSettings
from tests.cache_builds import cached
from tests.effects.test_cache import ScaleFile

CPU = torch.device("cpu")
SIZES = (1, 2)


CALLS: queue.SimpleQueue[int] = queue.SimpleQueue()
"""Eager calls counted in an object the behaviour digest cannot read into (a counter the
model never reads: a list would be state, and the key would rightly change with it)."""


def _clear_calls() -> None:
    while not CALLS.empty():
        CALLS.get_nowait()


class Counting(torch.nn.Module):
    """The identity, counting its forward calls (eager runs)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x``, one call counted."""
        CALLS.put(1)
        return x


@pytest.fixture(autouse=True)
def _reset() -> None:
    ScaleFile.builds.clear()
    _clear_calls()


def _samples(value: float = 1.0) -> Samples:
    return normalise_samples([torch.full((1, 3), value), torch.full((1, 3), value + 1)])


def _built(tmp_path: Path, work: str, samples: Samples, sizes: Any = SIZES) -> Built:
    effect = cached(
        ScaleFile(factor=1.0), Counting(), samples, CPU, tmp_path / work, tmp_path / "cache",
        reference_sizes=sizes,
    )  # fmt: skip
    built: Built = unsafe_perform_io(effect.unwrap())
    return built


def _validated(built: Built, samples: Samples) -> ValidationReport:
    _clear_calls()
    report: ValidationReport = unsafe_perform_io(
        validate("scale_file", built, Counting(), samples, CPU, batch_sizes=SIZES).unwrap()
    )
    return report


def _entry(tmp_path: Path) -> Path:
    (entry,) = (tmp_path / "cache" / "artifacts").iterdir()
    return entry


def test_a_stored_entry_lists_its_sealed_reference_and_a_hit_validates_without_eager(
    tmp_path: Path,
) -> None:
    """The reference file is listed with its size and sha256; a hit for the same samples
    validates against it and never calls the eager module, with the same errors."""
    samples = _samples()
    fresh = _built(tmp_path, "w1", samples)
    entry = _entry(tmp_path)
    index = json.loads((entry / "entry.json").read_text())
    data = (entry / REFERENCE_FILE).read_bytes()
    listed = index["files"][REFERENCE_FILE]
    assert listed == {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    assert index["reference"]["file"] == REFERENCE_FILE
    eager = _validated(fresh, samples)
    assert eager.reference == "eager" and CALLS.qsize() == len(eager.batches)
    hit = _built(tmp_path, "w2", samples)
    assert hit.info["cache"] == "hit" and len(ScaleFile.builds) == 1
    cached = _validated(hit, samples)
    assert cached.reference == "cached" and CALLS.empty()
    assert cached.batches == eager.batches and cached.as_dict()["cached_reference"] == 1.0
    assert (cached.max_abs_error, cached.max_rel_error) == (eager.max_abs_error, 0.0)


def test_other_sample_values_of_the_same_shape_validate_against_eager(tmp_path: Path) -> None:
    """Samples with the same shapes (same cache key) but other values hit the entry, and
    validation runs eager, since the stored outputs were made from other numbers."""
    _built(tmp_path, "w1", _samples(1.0))
    other = _samples(5.0)
    hit = _built(tmp_path, "w2", other)
    assert hit.info["cache"] == "hit"
    report = _validated(hit, other)
    assert report.reference == "eager" and CALLS.qsize() == len(report.batches)


def test_a_reference_without_every_checked_batch_is_not_used(tmp_path: Path) -> None:
    """An entry whose reference was made at other batch sizes validates with eager."""
    samples = _samples()
    _built(tmp_path, "w1", samples, sizes=(1,))
    report = _validated(_built(tmp_path, "w2", samples), samples)
    assert report.reference == "eager" and not CALLS.empty()


def test_a_tampered_reference_file_discards_the_entry_and_validation_uses_eager(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A reference file changed after it was sealed makes the whole entry untrusted: it is
    discarded, the backend rebuilt, and validation of the rebuild runs eager."""
    samples = _samples()
    _built(tmp_path, "w1", samples)
    path = _entry(tmp_path) / REFERENCE_FILE
    raw = bytearray(path.read_bytes())
    raw[-20] ^= 0xFF
    path.write_bytes(bytes(raw))
    with caplog.at_level(logging.WARNING, logger="aitune_fp"):
        rebuilt = _built(tmp_path, "w2", samples)
    assert rebuilt.info["cache"] == "stored" and len(ScaleFile.builds) == 2
    assert "discarding entry" in caplog.text
    assert _validated(rebuilt, samples).reference == "eager" and not CALLS.empty()


def test_an_unreadable_reference_is_not_used(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A reference that cannot be read back gives ``None`` (eager runs) and a warning."""
    garbage = tmp_path / "ref.pt"
    garbage.write_bytes(b"not a torch file")
    samples = _samples()
    from aitune_fp.effects.cache.reference import samples_digest

    info = {"cache_reference": {"file": str(garbage), "samples": samples_digest(samples)}}
    with caplog.at_level(logging.WARNING, logger="aitune_fp"):
        assert cached_references(Built(print, info=info), samples, SIZES, CPU) is None
    assert "unreadable" in caplog.text


def _candidate(tmp_path: Path, run: str, samples: Samples) -> CandidateRun:
    def check(built: Built):  # type: ignore[no-untyped-def]
        return validate("scale_file", built, Counting(), samples, CPU, batch_sizes=SIZES).map(
            ValidationReport.as_dict
        )

    request = BuildRequest(Counting(), samples, CPU, max_throughput.plan, (1,), SIZES,
                           tmp_path / "cache",
                           ProfileSettings(max_pool=2, max_seconds_per_batch=0.1))  # fmt: skip
    return run_candidate(
        request, Candidate(ScaleFile(factor=1.0), "scale_file", tmp_path / run), check
    )


def test_a_candidate_hit_records_and_logs_its_reference(tmp_path: Path) -> None:
    """A cold candidate validates against eager and a warm one against the cache entry; the
    record's validation and the backend's build.log say which."""
    samples = _samples()
    cold = _candidate(tmp_path, "run1", samples)
    warm = _candidate(tmp_path, "run2", samples)
    assert isinstance(cold.outcome, IOSuccess) and isinstance(warm.outcome, IOSuccess)
    assert cold.validation["cached_reference"] == 0.0
    assert warm.validation["cached_reference"] == 1.0
    assert "reference: eager" in (tmp_path / "run1" / "build.log").read_text()
    assert "reference: cached" in (tmp_path / "run2" / "build.log").read_text()


def test_a_poisoned_reference_fails_validation_and_the_entry_is_rebuilt_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A reference rewritten with its hash (so sealing passes) but wrong outputs fails the
    hit's validation: the entry is evicted, rebuilt once, and validated against eager."""
    samples = _samples()
    _candidate(tmp_path, "run1", samples)
    entry = _entry(tmp_path)
    path = entry / REFERENCE_FILE
    data = torch.load(path, weights_only=True)
    for stored in data["outputs"].values():  # each batch's leaves and structure
        stored["leaves"] = [leaf * 3 for leaf in stored["leaves"]]
    torch.save(data, path)
    index = json.loads((entry / "entry.json").read_text())
    raw = path.read_bytes()
    index["files"][REFERENCE_FILE] = {"size": len(raw), "sha256": hashlib.sha256(raw).hexdigest()}
    (entry / "entry.json").write_text(json.dumps(index))
    ScaleFile.builds.clear()
    with caplog.at_level(logging.WARNING, logger="aitune_fp"):
        again = _candidate(tmp_path, "run2", samples)
    assert isinstance(again.outcome, IOSuccess), again.outcome
    assert len(ScaleFile.builds) == 1 and "its runner failed validation" in caplog.text
    assert again.validation["cached_reference"] == 0.0
