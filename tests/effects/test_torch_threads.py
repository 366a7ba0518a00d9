"""Torch's intra-op threads as eager's runtime option: applied per call, then restored."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from returns.unsafe import unsafe_perform_io

from aitune_fp.core.accuracy import Search
from aitune_fp.effects.backends.eager import TorchEager
from aitune_fp.effects.backends.search_space import search_candidates
from aitune_fp.effects.inputs.samples import normalise_samples

CPU = torch.device("cpu")


class ThreadProbe(torch.nn.Module):
    """Returns its input plus the torch thread count it ran at; raises on an empty input."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.numel() == 0:
            raise ValueError("empty input")
        return x + torch.get_num_threads()


def test_eager_threads_apply_during_each_call_and_are_restored(tmp_path: Path) -> None:
    """eager(threads=1) computes at one thread, records it, and leaves the process's count
    as it found it, even when the call raises."""
    torch.set_num_threads(2)
    samples = normalise_samples([torch.zeros(1, 3)])
    config = TorchEager(threads=1)
    built = unsafe_perform_io(config.build(ThreadProbe(), samples, CPU, tmp_path).unwrap())
    assert config.describe() == "eager(threads=1)" and built.info["torch_threads"] == 1
    assert float(built.runner(torch.zeros(1, 3))[0, 0]) == 1.0
    assert torch.get_num_threads() == 2
    with pytest.raises(ValueError, match="empty"):
        built.runner(torch.zeros(0, 3))
    assert torch.get_num_threads() == 2
    plain = unsafe_perform_io(TorchEager().build(ThreadProbe(), samples, CPU, tmp_path).unwrap())
    assert float(plain.runner(torch.zeros(1, 3))[0, 0]) == 2.0
    with pytest.raises(ValueError, match="threads"):
        TorchEager(threads=-1)


def test_eager_at_one_thread_is_a_wide_variant_only() -> None:
    """The measured torch-threads variant is in the wide CPU search, not the default one."""
    assert TorchEager(threads=1) in search_candidates(Search("wide"), "cpu")
    assert TorchEager(threads=1) not in search_candidates(Search("default"), "cpu")
