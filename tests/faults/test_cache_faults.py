"""Cache faults: a poisoned, linked or misplaced entry never fails a tune, and is rebuilt once."""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path

import pytest
import torch
from returns.io import IOSuccess
from returns.unsafe import unsafe_perform_io

from aitune_fp.core.strategies import max_throughput
from aitune_fp.effects.backends.base import Built
from aitune_fp.effects.build_request import BuildRequest, Candidate
from aitune_fp.effects.cache.artifact_cache import unusable_reason
from aitune_fp.effects.candidate import run_candidate
from aitune_fp.effects.checks.validate import validate
from aitune_fp.effects.inputs.samples import normalise_samples
from aitune_fp.effects.measure.timing import ProfileSettings
from tests.cache_builds import cached
from tests.effects.test_cache import ScaleFile

CPU = torch.device("cpu")
SAMPLES = normalise_samples([torch.ones(1, 3)])
MODULE = torch.nn.Identity()


@pytest.fixture(autouse=True)
def _reset_builds() -> None:
    ScaleFile.builds.clear()


def _entry(cache: Path) -> Path:
    (entry,) = (cache / "artifacts").iterdir()
    return entry


def _poison(entry: Path, text: str) -> None:
    """Rewrite the artifact and its recorded hash, so integrity checks still pass."""
    (entry / "factor.txt").write_text(text)
    index = json.loads((entry / "entry.json").read_text())
    data = text.encode()
    index["files"]["factor.txt"] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    (entry / "entry.json").write_text(json.dumps(index))


def _candidate(tmp_path: Path, run: str):  # type: ignore[no-untyped-def]
    def check(built: Built):  # type: ignore[no-untyped-def]
        return validate("scale_file", built, MODULE, SAMPLES, CPU).map(lambda r: r.as_dict())

    request = BuildRequest(MODULE, SAMPLES, CPU, max_throughput.plan, (1,), (),
                           tmp_path / "cache",
                           ProfileSettings(max_pool=2, max_seconds_per_batch=0.1))  # fmt: skip
    return run_candidate(
        request, Candidate(ScaleFile(factor=1.0), "scale_file", tmp_path / run), check
    )


def test_a_poisoned_entry_that_fails_validation_is_evicted_and_rebuilt_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An entry whose hashes match but whose runner gives wrong outputs is evicted at its
    validation failure, rebuilt fresh once, and the backend still profiles."""
    first = _candidate(tmp_path, "run1")
    assert isinstance(first.outcome, IOSuccess)
    _poison(_entry(tmp_path / "cache"), "3.0")
    ScaleFile.builds.clear()
    with caplog.at_level(logging.WARNING, logger="aitune_fp"):
        second = _candidate(tmp_path, "run2")
    assert isinstance(second.outcome, IOSuccess), second.outcome
    assert len(ScaleFile.builds) == 1
    assert "its runner failed validation" in caplog.text
    assert (_entry(tmp_path / "cache") / "factor.txt").read_text() == "1.0"


def test_a_symlinked_cache_file_is_not_trusted(tmp_path: Path) -> None:
    """An entry file replaced by a link to an identical file elsewhere is discarded."""
    cache = tmp_path / "cache"
    cached(ScaleFile(), MODULE, SAMPLES, CPU, tmp_path / "w1", cache)
    entry = _entry(cache)
    outside = tmp_path / "outside.txt"
    outside.write_bytes((entry / "factor.txt").read_bytes())
    (entry / "factor.txt").unlink()
    os.symlink(outside, entry / "factor.txt")
    built = unsafe_perform_io(
        cached(ScaleFile(), MODULE, SAMPLES, CPU, tmp_path / "w2", cache).unwrap()
    )
    assert built.info.get("cache") == "stored" and len(ScaleFile.builds) == 2


def test_an_entry_artifact_outside_its_folder_is_not_trusted(tmp_path: Path) -> None:
    """An entry.json whose artifact is ``../x`` or absolute is discarded and rebuilt."""
    cache = tmp_path / "cache"
    for i, artifact in enumerate(["../factor.txt", str(tmp_path / "factor.txt")]):
        cached(ScaleFile(), MODULE, SAMPLES, CPU, tmp_path / f"a{i}", cache)
        entry = _entry(cache)
        (tmp_path / "factor.txt").write_text("2.0")
        index = json.loads((entry / "entry.json").read_text())
        index["artifact"] = artifact
        (entry / "entry.json").write_text(json.dumps(index))
        built = unsafe_perform_io(
            cached(ScaleFile(), MODULE, SAMPLES, CPU, tmp_path / f"b{i}", cache).unwrap()
        )
        assert built.info.get("cache") == "stored"
        assert built.artifact is not None and tmp_path / "factor.txt" != built.artifact


def test_artifacts_being_a_file_only_skips_the_cache(tmp_path: Path) -> None:
    """With ``cache/artifacts`` a regular file, a cacheable backend still builds and runs."""
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "artifacts").write_text("not a folder")
    assert unusable_reason(cache) is not None and "cache" in unusable_reason(cache)  # type: ignore[operator]
    built = unsafe_perform_io(
        cached(ScaleFile(), MODULE, SAMPLES, CPU, tmp_path / "w", cache).unwrap()
    )
    assert "cache" not in built.info or built.info["cache"] != "stored"
    assert torch.equal(built.runner(torch.ones(2)), torch.full((2,), 2.0))
