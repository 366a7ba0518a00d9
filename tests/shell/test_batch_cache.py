"""The max-batch search's cache: reuse under equal keys only, integrity, faults cached."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from aitune_fp.core.record.max_batch import MaxBatchSearch
from aitune_fp.core.strategies import max_throughput
from aitune_fp.effects.inputs.samples import Samples, normalise_samples
from aitune_fp.effects.isolation import Timeouts
from aitune_fp.shell.batch_cache import entry_path, load, store, sweep_keys
from aitune_fp.shell.batch_search import search_max_batch

CPU = torch.device("cpu")
KEYS = {"model": "m1", "inputs": "spec", "samples": "s", "profiling": "p", "environment": "e",
        "device": "cpu", "isolation": "True", "cap": "8", "call_timeout": "60.0"}  # fmt: skip
CRASHED = MaxBatchSearch("crashed", "eager crashed at batch size 4 (SIGSEGV)", 4)


def _samples(seed: int = 0) -> Samples:
    torch.manual_seed(seed)
    return normalise_samples([torch.randn(1, 8) for _ in range(2)])


def test_a_stored_result_reads_back_marked_as_reused(tmp_path: Path) -> None:
    """What was stored under some keys is what a load under the same keys gives, with the
    file it came from as ``reused_from``; a fault-stopped sweep keeps its reason."""
    store(tmp_path, KEYS, 2, CRASHED)
    hit = load(tmp_path, dict(KEYS))
    assert hit is not None
    size, search = hit
    assert (size, search.stop, search.reason, search.failed_at) == (2, "crashed", CRASHED.reason, 4)
    assert search.reused_from == str(entry_path(tmp_path, KEYS))


@settings(max_examples=20)
@given(st.sampled_from(sorted(KEYS)), st.text(min_size=1, max_size=8))
def test_a_result_is_never_reused_when_any_key_differs(key: str, value: str) -> None:
    """Changing any one key (the model, inputs, environment, device, ...) finds nothing."""
    import tempfile

    folder = Path(tempfile.mkdtemp())
    store(folder, KEYS, 8, MaxBatchSearch("cap", "reached the cap 8"))
    other = {**KEYS, key: KEYS[key] + value}
    assert load(folder, other) is None


def test_a_result_whose_keys_differ_inside_its_file_is_not_used(tmp_path: Path) -> None:
    """A file at the right name whose recorded keys differ (a collision, a copy) is refused."""
    store(tmp_path, {**KEYS, "model": "other"}, 8, MaxBatchSearch("cap", "reached the cap 8"))
    entry_path(tmp_path, {**KEYS, "model": "other"}).rename(entry_path(tmp_path, KEYS))
    assert load(tmp_path, KEYS) is None


@pytest.mark.parametrize("damage", ["truncate", "edit", "garbage"])
def test_a_damaged_cache_file_is_ignored_with_a_warning_and_removed(
    tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A truncated, edited or unparsable file is never used: a warning, and it is removed."""
    store(tmp_path, KEYS, 8, MaxBatchSearch("cap", "reached the cap 8"))
    path = entry_path(tmp_path, KEYS)
    text = path.read_text()
    if damage == "truncate":
        path.write_text(text[: len(text) // 2])
    elif damage == "edit":
        data = json.loads(text)
        data["body"]["max_batch_size"] = 64
        path.write_text(json.dumps(data))
    else:
        path.write_bytes(b"\x00\xff")
    assert load(tmp_path, KEYS) is None
    assert not path.exists() and "ignoring the cached max-batch result" in caplog.text


def test_the_keys_see_the_model_weights_samples_cap_and_call_timeout() -> None:
    """Another model's weights, other sample values, another cap or call timeout: other keys."""
    model, samples, plan = torch.nn.Linear(8, 8), _samples(), max_throughput.plan

    def keys(m: torch.nn.Module, s: Samples, cap: int, call: float) -> dict[str, str]:
        return sweep_keys(m, s, CPU, plan, cap, isolation=True, timeouts=Timeouts(call=call))

    base = keys(model, samples, 8, 60.0)
    assert base == keys(model, samples, 8, 60.0)
    for other in (keys(torch.nn.Linear(8, 8), samples, 8, 60.0), keys(model, _samples(1), 8, 60.0),
                  keys(model, samples, 16, 60.0), keys(model, samples, 8, 5.0)):  # fmt: skip
        assert other != base


def test_a_crashing_sweep_is_cached_and_the_warm_search_reuses_it(tmp_path: Path) -> None:
    """A sweep that a real segfault stopped is stored; the next search with the same keys
    takes it from the cache (no worker crashes again) and says so."""
    from tests.faults.faulty import FaultyModule

    model = FaultyModule("segfault", 4)
    args = (model, _samples(), CPU, max_throughput.plan, 64)
    cold = search_max_batch(*args, isolation=True, timeouts=Timeouts(), cache=tmp_path).unwrap()
    warm = search_max_batch(*args, isolation=True, timeouts=Timeouts(), cache=tmp_path).unwrap()
    assert cold == (2, CRASHED) and cold[1].reused_from is None
    assert warm[0] == 2 and warm[1].failed_at == 4 and warm[1].reused_from is not None
    other = FaultyModule("segfault", 8)  # other behaviour: swept again, not reused
    fresh = search_max_batch(other, *args[1:], isolation=True, timeouts=Timeouts(), cache=tmp_path)
    assert fresh.unwrap()[1].reused_from is None and fresh.unwrap()[0] == 4
