"""A TunedGenerator saves as a sealed folder through the strict codec, like aitune_fp.save:
aitune_fp.save/load take it, and a tampered, unlisted, foreign or mismatched save is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
import torch

pytest.importorskip("transformers")

import aitune_fp
from aitune_fp.core.generation.saved_record import GeneratorRecord
from aitune_fp.core.record.json_codec import from_json
from aitune_fp.shell.generation.tuned_generator import TunedGenerator
from aitune_fp.shell.persist import LoadError, manifest_digest
from tests import tiny_hf
from tests.tiny_generator import picked


@pytest.fixture(scope="module")
def model() -> Any:
    """The shared tiny Llama, vocabulary 256 (seeded)."""
    return tiny_hf.tiny_llama(vocab=256)


@pytest.fixture
def saved(model: Any, tmp_path: Path) -> Path:
    """The fp32 static-cache pick saved with aitune_fp.save."""
    return aitune_fp.save(picked(model), tmp_path / "gen")


def test_save_is_a_sealed_folder_decoded_strictly(saved: Path) -> None:
    """The folder holds exactly the manifest and generation.json; the manifest lists the
    record's size and sha256, and the record decodes strictly into a GeneratorRecord."""
    assert sorted(p.name for p in saved.iterdir()) == ["generation.json", "manifest.json"]
    manifest = json.loads((saved / "manifest.json").read_text())
    assert manifest["format"] == "aitune_fp.saved_generator" and manifest["pick"] == "eager_static"
    assert set(manifest["files"]) == {"generation.json"} and manifest["weights_sha256"]
    data = msgspec.json.decode((saved / "generation.json").read_bytes())
    record = from_json(data, GeneratorRecord, "generation.json")
    assert record.pick == "eager_static" and {r.name for r in record.results} >= {"eager_static"}


def test_load_takes_a_generator_save_and_generates(saved: Path, model: Any) -> None:
    """aitune_fp.load(path, module=model) gives the generator back, pinned by the manifest's
    digest, and it generates the model's greedy tokens."""
    loaded = aitune_fp.load(saved, module=model, expected_digest=manifest_digest(saved))
    assert isinstance(loaded, TunedGenerator) and loaded.pick.name == "eager_static"
    ids = torch.randint(3, 256, (1, 5), generator=torch.Generator().manual_seed(3))
    want = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=4,
                          min_new_tokens=4, do_sample=False, pad_token_id=0)  # fmt: skip
    assert torch.equal(loaded.generate(ids, max_new_tokens=4, min_new_tokens=4), want)


def test_a_tampered_or_unlisted_file_is_refused(saved: Path, model: Any) -> None:
    """A changed record or an extra file in the folder is a LoadError naming it."""
    (saved / "extra.bin").write_bytes(b"x")
    with pytest.raises(LoadError, match=r"extra\.bin"):
        TunedGenerator.load(saved, module=model)
    (saved / "extra.bin").unlink()
    text = (saved / "generation.json").read_text().replace("forced", "FORCED")
    (saved / "generation.json").write_text(text)
    with pytest.raises(LoadError, match=r"generation\.json"):
        TunedGenerator.load(saved, module=model)


def test_another_model_a_missing_model_or_a_bad_pin_is_refused(saved: Path) -> None:
    """Other weights, no module (the pick is a recipe) or a wrong pinned digest is a
    LoadError saying so."""
    other = tiny_hf.tiny_llama(vocab=256)
    with torch.no_grad():
        next(other.parameters()).add_(1.0)
    with pytest.raises(LoadError, match="weights"):
        aitune_fp.load(saved, module=other)
    with pytest.raises(LoadError, match="recipe"):
        aitune_fp.load(saved)
    with pytest.raises(LoadError, match="expected"):
        aitune_fp.load(saved, module=other, expected_digest="sha256:" + "0" * 64)


def test_a_record_of_the_wrong_type_is_refused_by_path(saved: Path, model: Any) -> None:
    """A record whose value has the wrong type, resealed, is refused naming its JSON path."""
    from aitune_fp.effects.cache.integrity import digest

    data = json.loads((saved / "generation.json").read_text())
    data["tune_wall_s"] = "slow"
    (saved / "generation.json").write_text(json.dumps(data))
    manifest = json.loads((saved / "manifest.json").read_text())
    fresh = digest(saved / "generation.json")
    manifest["files"]["generation.json"] = {"size": fresh.size, "sha256": fresh.sha256}
    (saved / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(LoadError, match="tune_wall_s"):
        TunedGenerator.load(saved, module=model)
