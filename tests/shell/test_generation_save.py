"""tune_generate from string prompts with a tokenizer (built offline); an unreachable TTFT
budget keeps the baseline and says why; a saved pick loads in a fresh process without
re-tuning and generates the same tokens."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

transformers = pytest.importorskip("transformers")

from aitune_fp import TunedGenerator, generation_budget, tune_generate  # noqa: E402
from aitune_fp.shell.io import perform  # noqa: E402
from tests import tiny_hf  # noqa: E402
from tests.tiny_tokenizer import tiny_tokenizer  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
LOAD = """
import json, sys
import torch
from aitune_fp import TunedGenerator
from tests.no_tuning import bindings, refuse
from tests.tiny_hf import tiny_llama

found = bindings()
assert len(found) >= 5, found  # the timers, tune_generate, and the names their callers bound
for module, name in found:
    setattr(module, name, refuse)

loaded = TunedGenerator.load(sys.argv[1], module=tiny_llama(vocab=256))
ids = torch.tensor(json.loads(sys.argv[2]))
out = loaded.generate(ids, max_new_tokens=6, do_sample=False)
results = [[r.name, r.ttft_ms, r.itl_ms] for r in loaded.results]
print(json.dumps({"pick": loaded.pick.name, "tokens": out.tolist(), "results": results}))
"""


@pytest.fixture(scope="module")
def model() -> Any:
    """The shared tiny Llama, vocabulary 256 (seeded: the same weights in every process)."""
    return tiny_hf.tiny_llama(vocab=256)


@pytest.fixture(scope="module")
def budgeted(model: Any) -> TunedGenerator:
    """A tune from text prompts under a TTFT budget nobody can meet (1 ns)."""
    made = tune_generate(
        model,
        ["w5 w9 w77 w120 w3 w44"],
        tokenizer=tiny_tokenizer(),
        new_tokens=2,
        strategy=generation_budget(ttft_ms=1e-6),
        candidates=["eager_static"],
    )
    return perform(made).unwrap()


def test_text_prompts_are_tokenized_and_measured(budgeted: TunedGenerator) -> None:
    """The text prompt is measured at its token length, for the baseline and the candidate."""
    points = {(r.name, r.prompt_len) for r in budgeted.results}
    assert points == {("hf_eager_dynamic", 6), ("eager_static", 6)}
    static = [r for r in budgeted.results if r.name == "eager_static"]
    assert all(r.failure is None and r.top1 == 1.0 for r in static)


def test_unreachable_ttft_budget_falls_back_and_says_why(budgeted: TunedGenerator) -> None:
    """No candidate meets 1 ns: the pick is the baseline, the record says which budget was
    unreachable and what was measured."""
    record = budgeted.record()
    assert record["pick"] == "hf_eager_dynamic" and record["fell_back"] is True
    assert "budget ttft<=1e-06ms unreachable" in record["reason"]
    assert "best measured TTFT" in record["reason"]


def test_string_prompts_need_a_tokenizer(model: Any) -> None:
    """A text prompt without tokenizer= is a one-line TuneError saying so, before any
    measurement."""
    made = perform(tune_generate(model, ["w5 w6"], new_tokens=2, candidates=["eager_static"]))
    message = made.failure().message
    assert "tokenizer" in message and "\n" not in message


def test_saved_pick_loads_in_a_fresh_process_and_generates_the_same(
    budgeted: TunedGenerator, model: Any, tmp_path: Path
) -> None:
    """The saved fp32 static-cache pick, loaded in a new Python over the same model with
    every binding of the tuner and the generation timers refused (however its callers
    imported them), keeps the tune's figures and generates this process's tokens."""
    chosen = TunedGenerator.load_pick(budgeted, "eager_static")
    chosen.save(tmp_path / "gen.json")
    ids = torch.randint(3, 256, (2, 5), generator=torch.Generator().manual_seed(7))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", LOAD, str(tmp_path / "gen.json"), json.dumps(ids.tolist())],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    want = chosen.generate(ids, max_new_tokens=6, do_sample=False)
    kept = [[r.name, r.ttft_ms, r.itl_ms] for r in chosen.results]  # the tune's, not new ones
    assert answer == {"pick": "eager_static", "tokens": want.tolist(), "results": kept}
    assert torch.equal(want, model.generate(ids, max_new_tokens=6, do_sample=False))
