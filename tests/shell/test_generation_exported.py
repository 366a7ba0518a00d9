"""AOTInductor and ONNX Runtime generation candidates on the tiny Llama: exact greedy tokens,
each phase's backend in the record, a saved AOTInductor pick reloaded from disk, and a build
past its budget recorded as a timeout."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")

from aitune_fp import TunedGenerator, tune_generate  # noqa: E402
from aitune_fp.shell.io import perform  # noqa: E402
from tests import tiny_hf  # noqa: E402

pytestmark = pytest.mark.heavy


@pytest.fixture(scope="module")
def packages(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh package folder for this module (nothing compiled before)."""
    with tiny_hf.generation_dir(tmp_path_factory.mktemp("packages")) as folder:
        yield folder


@pytest.fixture(scope="module")
def tiny_llama() -> torch.nn.Module:
    """The shared tiny Llama (tests/tiny_hf.py), vocabulary 256."""
    return tiny_hf.tiny_llama(vocab=256)


@pytest.fixture(scope="module")
def tuned(tiny_llama: torch.nn.Module, packages: Path) -> TunedGenerator:
    """One tune over the exported candidates (one AOTInductor build, one ONNX export)."""
    prompt = torch.randint(0, 256, (8,))
    names = ["eager_static", "aoti_static", "aoti_decode", "onnx_static"]
    made = tune_generate(tiny_llama, [prompt], new_tokens=6, candidates=names, wall_budget_s=1e4)
    return perform(made).unwrap()


def _want(model: torch.nn.Module, ids: torch.Tensor, new: int) -> torch.Tensor:
    return model.generate(  # type: ignore[no-any-return,operator]
        ids,
        attention_mask=torch.ones_like(ids),
        max_new_tokens=new,
        min_new_tokens=new,
        do_sample=False,
        pad_token_id=0,
    )


def test_exported_candidates_are_measured_per_phase(tuned: TunedGenerator) -> None:
    """Each exported candidate is accurate, timed, and names its prefill and decode backends."""
    by_name = {r.name: r for r in tuned.results}
    for name in ("aoti_static", "aoti_decode", "onnx_static"):
        r = by_name[name]
        assert r.failure is None and r.accurate and r.top1 == 1.0 and r.itl_ms > 0, r
    assert (by_name["aoti_decode"].prefill, by_name["aoti_decode"].decode) == (
        "eager-static-float32",
        "aoti-static-float32",
    )
    assert by_name["onnx_static"].decode == "onnx-static-float32"


@pytest.mark.parametrize("name", ["aoti_static", "aoti_decode", "onnx_static"])
def test_exported_greedy_matches_the_model(
    tuned: TunedGenerator, tiny_llama: torch.nn.Module, name: str
) -> None:
    """The exported steps reproduce model.generate's greedy tokens at batch 2 and batch 1."""
    forced = TunedGenerator.load_pick(tuned, name)
    for rows in (2, 1):
        ids = torch.randint(0, 256, (rows, 7))
        got = forced.generate(ids, max_new_tokens=5, min_new_tokens=5)
        assert torch.equal(got, _want(tiny_llama, ids, 5))


def test_saved_aoti_pick_loads_its_package(
    tuned: TunedGenerator, tiny_llama: torch.nn.Module, packages: Path, tmp_path: Path
) -> None:
    """A saved AOTInductor pick reloads from the package on disk (no compile) into a store
    of its own (no module-global cache shares the tune's) and generates."""
    TunedGenerator.load_pick(tuned, "aoti_static").save(tmp_path / "gen.json")
    assert list(packages.glob("*.pt2"))
    loaded = TunedGenerator.load(tmp_path / "gen.json", module=tiny_llama)
    assert loaded.steppers.aoti is not tuned.steppers.aoti  # its own store: nothing reused
    assert loaded.steppers.aoti.loaded and not loaded.steppers.aoti.pending
    ids = torch.randint(0, 256, (1, 6))
    assert loaded.pick.name == "aoti_static"
    assert torch.equal(
        loaded.generate(ids, max_new_tokens=4, min_new_tokens=4), _want(tiny_llama, ids, 4)
    )


def test_build_past_its_budget_is_a_recorded_timeout(tmp_path: Path) -> None:
    """An AOTInductor compile over its budget is killed and recorded; its twin is not retried."""
    os.environ["AITUNE_FP_GENERATION_DIR"], before = (
        str(tmp_path),
        os.environ.get("AITUNE_FP_GENERATION_DIR", ""),
    )
    try:
        tuned = tune_generate(
            tiny_hf.tiny_llama(vocab=64),
            [torch.randint(0, 64, (4,))],
            new_tokens=3,
            candidates=["eager_static", "aoti_static", "aoti_decode"],
            build_budget_s=0.5,
        )
        tuned = perform(tuned).unwrap()
    finally:
        os.environ["AITUNE_FP_GENERATION_DIR"] = before
    by_name = {r.name: r for r in tuned.results}
    assert "BuildTimeout" in str(by_name["aoti_static"].failure)
    assert "already failed" in str(by_name["aoti_decode"].failure)
    assert tuned.pick.name in {"eager_static", "hf_eager_dynamic"}
