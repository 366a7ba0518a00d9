"""A generation tune goes through the decision cache as a tune does: an unchanged re-tune
replays the stored session and re-verifies its pick, a changed one or ``fresh`` tunes in
full, and the model's key is the same in every process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

pytest.importorskip("transformers")

from aitune_fp import tune_generate
from aitune_fp.core.session.recorded import replay_lines, replay_record
from aitune_fp.shell.io import perform
from tests import tiny_hf

CANDIDATES = ["eager_static"]  # clearly faster than HF generate: no near-tie to re-judge


def _tuned(model: torch.nn.Module, cache: Path, prompt: torch.Tensor, **options: object):  # type: ignore[no-untyped-def]
    lines: list[str] = []
    made = tune_generate(model, [prompt], new_tokens=4, candidates=CANDIDATES,
                         cache_dir=cache, progress=lines.append, **options)  # fmt: skip
    return perform(made).unwrap(), lines


def test_an_unchanged_retune_rechecks_the_stored_pick_and_a_changed_one_tunes_in_full(
    tmp_path: Path,
) -> None:
    """The second tune of the same model and prompt builds and checks nothing, keeps the
    stored pick and record (its events replay to the same pick) with its own
    re-verification against HF generate; ``fresh`` and a new prompt tune in full, the
    latter naming the samples as what changed."""
    model = tiny_hf.tiny_llama(vocab=256)
    prompt = torch.randint(0, 256, (6,), generator=torch.Generator().manual_seed(3))
    first, _ = _tuned(model, tmp_path, prompt)
    assert first.run is not None and first.run.provenance.decision == "full tune"
    again, lines = _tuned(model, tmp_path, prompt)
    record = again.run
    assert record is not None and record.provenance.cache_hit
    assert not [line for line in lines if "teacher-forced" in line]  # nothing was built
    assert again.pick.name == first.pick.name == record.selection.backend
    assert record.reverification is not None
    assert "hf_eager_dynamic" in record.reverification.samples_ms
    assert replay_lines(record, replay_record(record))[-1] == "every decision is the recorded one"
    fresh, _ = _tuned(model, tmp_path, prompt, fresh=True)
    assert fresh.run is not None and not fresh.run.provenance.cache_hit
    other, _ = _tuned(model, tmp_path, torch.randint(0, 256, (7,)))
    assert other.run is not None
    assert other.run.provenance.decision == "full tune: changed since the stored decision: samples"


def test_a_language_models_key_is_the_same_in_two_processes() -> None:
    """The model digest of a Hugging Face causal LM (whose generation config keeps the
    process-bound hash() it was made with) is equal in two fresh processes."""
    code = ("import torch; torch.manual_seed(0); from tests.tiny_hf import tiny_llama; "
            "from aitune_fp.effects.cache.key import model_digest; "
            "print(model_digest(tiny_llama(vocab=256)))")  # fmt: skip
    root = Path(__file__).resolve().parents[2]
    seen = {
        subprocess.run(
            [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        for _ in range(2)
    }
    assert len(seen) == 1
