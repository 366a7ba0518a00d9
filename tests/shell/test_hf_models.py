"""Real Hugging Face models built from configs in code (no download), tuned for real.

A BERT-style text encoder with keyword inputs and variable sequence length, a ResNet at two
resolutions, and un-batched items: each builds real CPU backends, so they are heavy.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import torch
from returns.unsafe import unsafe_perform_io

import aitune_fp
from aitune_fp import one_backend
from aitune_fp.shell.tune_module import TuneOptions, run_tuning, tune_module
from aitune_fp.shell.tuned_module import OutsideEnvelopeWarning, TunedModule
from tests.tiny_hf import SHORT, tiny_bert

transformers = pytest.importorskip("transformers")
pytestmark = pytest.mark.heavy


def bert() -> torch.nn.Module:
    """A two-layer BERT-style encoder from a config (random weights, no download)."""
    return tiny_bert(num_hidden_layers=2, max_position_embeddings=128, return_dict=False)


def text(batch: int, length: int, seed: int = 0) -> dict[str, torch.Tensor]:
    """Keyword inputs of one length, with the last positions of row 0 padded out."""
    gen = torch.Generator().manual_seed(seed * 1000 + length)
    mask = torch.ones(batch, length, dtype=torch.int64)
    mask[0, length // 2 :] = 0
    return {
        "input_ids": torch.randint(0, 200, (batch, length), generator=gen),
        "attention_mask": mask,
    }


@pytest.mark.parametrize("backend", ["onnxruntime", "aot_inductor", "inductor"])
def test_bert_matches_eager_at_every_length_in_the_declared_range(
    backend: str, tmp_path: Path
) -> None:
    """Tuned on lengths 12/16/24 with a declared 8..64 sequence axis, the tuned module matches
    eager at every length in range (unseen ones too) and falls back, warning once, outside."""
    module = bert()
    samples = [text(2, n, seed=i) for i, n in enumerate((12, 16, 24))]
    effect = tune_module(
        module,
        samples,
        one_backend(SHORT, backend),
        [backend],
        cache_dir=tmp_path,
        dynamic_axes={"input_ids": {1: (8, 64)}},
    )
    tuned: TunedModule = unsafe_perform_io(effect).unwrap()
    assert tuned.backend == backend
    with warnings.catch_warnings():
        warnings.simplefilter("error", OutsideEnvelopeWarning)
        for length in range(8, 65):
            x = text(3, length, seed=7)
            got, want = tuned(**x), module(**x)
            torch.testing.assert_close(got[0], want[0], rtol=1e-3, atol=1e-4)
    with pytest.warns(OutsideEnvelopeWarning, match="outside the tuned range 8..64") as seen:
        for length in (65, 7, 80):
            x = text(2, length)
            torch.testing.assert_close(tuned(**x)[0], module(**x)[0])
    assert len([w for w in seen if issubclass(w.category, OutsideEnvelopeWarning)]) == 1
    if backend == "onnxruntime":  # save/load keep the dynamic spec and the envelope
        loaded = aitune_fp.load(aitune_fp.save(tuned, tmp_path / "saved"))
        assert loaded.samples.spec == tuned.samples.spec
        x = text(2, 40)
        torch.testing.assert_close(loaded(**x)[0], module(**x)[0], rtol=1e-3, atol=1e-4)
    tuned.close()


def test_resnet_at_two_resolutions_gets_inferred_spatial_axes(tmp_path: Path) -> None:
    """A ResNet tuned on 32 px and 48 px images infers both spatial axes as dynamic and
    matches eager at resolutions between them."""
    torch.manual_seed(0)
    config = transformers.ResNetConfig(
        embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1], num_channels=3, return_dict=False
    )
    module = transformers.ResNetModel(config).eval()
    samples = [torch.randn(2, 3, r, r) for r in (32, 48)]
    run = unsafe_perform_io(
        run_tuning(module, samples, SHORT, ["onnxruntime"], TuneOptions(cache_dir=tmp_path))
    ).unwrap()
    axes = run.record.input_spec["dynamic"]
    assert [(a["axis"], a["min"], a["max"], a["inferred"]) for a in axes] == [
        (2, 32, 48, True),
        (3, 32, 48, True),
    ]
    assert run.tuned is not None and run.tuned.backend == "onnxruntime"
    for size in (32, 40, 48):
        x = torch.randn(1, 3, size, size)
        torch.testing.assert_close(run.tuned(x)[0], module(x)[0], rtol=1e-3, atol=1e-4)
    run.tuned.close()


def test_unbatched_mlp_items_tune_for_real(tmp_path: Path) -> None:
    """Eight un-batched items tune with batched=False on a real compiled backend."""
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(256, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    items = [torch.randn(256) for _ in range(8)]
    effect = tune_module(
        module.eval(), items, SHORT, ["onnxruntime"], cache_dir=tmp_path, batched=False
    )
    tuned = unsafe_perform_io(effect).unwrap()
    x = torch.stack(items[:4])
    torch.testing.assert_close(tuned(x), module(x), rtol=1e-3, atol=1e-4)
    tuned.close()
