"""``aitune-fp tune-generate --save F --remeasure``: the saved pick is re-measured in a fresh
process over the factory's model; the console shows the tune's and the fresh process's
tokens/s side by side and the save keeps the fresh figures."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from aitune_fp.cli.main import main

pytestmark = pytest.mark.heavy

MODEL = """
from tests.tiny_hf import tiny_llama

def build():
    return tiny_llama(vocab=256)
"""


def test_remeasure_prints_both_figures_and_saves_the_fresh_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One tune of the tiny Llama with --remeasure: exit 0, a 'tune' and a 'fresh process'
    line with the pick's and HF's tokens/s, and the save's "fresh" entry at the primary
    point with finite, positive figures that still loads as a generator save."""
    from aitune_fp.shell.generation.tuned_generator import is_generator_save

    model_file, saved = tmp_path / "lm.py", tmp_path / "gen.json"
    model_file.write_text(MODEL)
    argv = ["tune-generate", f"{model_file}:build", "--prompt-lengths", "6", "--new-tokens"]
    argv += ["3", "--batch-sizes", "2", "--candidates", "eager_static", "--save", str(saved)]
    assert main([*argv, "--remeasure"]) == 0
    out = capsys.readouterr().out
    assert "HF generate at b2 L6:" in out
    assert "  tune: " in out and "  fresh process: " in out
    fresh = json.loads((saved / "generation.json").read_text())["fresh"]
    assert (fresh["batch"], fresh["prompt_len"]) == (2, 6)
    for key in ("tokens_per_s", "hf_tokens_per_s", "speedup", "ttft_ms", "itl_ms"):
        assert math.isfinite(fresh[key]) and fresh[key] > 0
    assert is_generator_save(saved)
