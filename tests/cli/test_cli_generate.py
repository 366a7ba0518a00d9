"""``aitune-fp tune-generate``: strategy options, an unreachable budget that keeps the
baseline and says why on the console and in the save, and one-line usage errors."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from aitune_fp.cli.main import main

MODEL = """
from tests.tiny_hf import tiny_llama
from tests.tiny_tokenizer import tiny_tokenizer

def build():
    return tiny_llama(vocab=256)

def tokenizer():
    return tiny_tokenizer()

def linear():
    import torch
    return torch.nn.Linear(2, 2)
"""


@pytest.fixture
def model_file(tmp_path: Path) -> Path:
    """A user's file with a factory of the tiny Llama."""
    path = tmp_path / "lm.py"
    path.write_text(MODEL)
    return path


def test_unreachable_budget_keeps_the_baseline_and_says_why(
    model_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--ttft-ms nobody meets: exit 0, the console and the saved record name the unreachable
    budget, and the saved pick is the baseline; the text prompt is measured at its 3 tokens."""
    saved = tmp_path / "gen.json"
    code = main(
        [
            "tune-generate",
            f"{model_file}:build",
            "--prompt",
            "w5 w9 w77",
            "--tokenizer",
            f"{model_file}:tokenizer",
            "--new-tokens",
            "2",
            "--candidates",
            "eager_static",
            "--ttft-ms",
            "0.000001",
            "--save",
            str(saved),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0 and "budget ttft<=1e-06ms unreachable" in out and "eager_static" in out
    record = json.loads((saved / "generation.json").read_text())
    assert record["pick"] == "hf_eager_dynamic" and record["fell_back"] is True
    points = {(r["name"], r["prompt_len"]) for r in record["results"]}
    assert points == {("hf_eager_dynamic", 3), ("eager_static", 3)}


def test_prompts_are_random_ids_per_length_then_the_texts() -> None:
    """--prompt-lengths gives seeded random ids of each length (32 without any prompt
    option), followed by the --prompt texts."""
    from types import SimpleNamespace

    from aitune_fp.cli.generate_commands import _prompts

    model = SimpleNamespace(config=SimpleNamespace(vocab_size=50))
    both = _prompts(model, SimpleNamespace(prompt_lengths=(4, 7), prompt=["w5 w6"]))
    assert [tuple(p.shape) for p in both[:2]] == [(4,), (7,)] and both[2] == "w5 w6"
    assert all(int(p.max()) < 50 for p in both[:2])
    default = _prompts(model, SimpleNamespace(prompt_lengths=None, prompt=None))
    assert [tuple(p.shape) for p in default] == [(32,)]
    assert _prompts(model, SimpleNamespace(prompt_lengths=None, prompt=["w5"])) == ["w5"]


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--strategy", "budget"], "--strategy budget needs --ttft-ms and/or --itl-ms"),
        (["--strategy", "min-itl", "--itl-ms", "5"], "make a budget"),
        (["--candidates", "warp_drive"], "unknown candidate 'warp_drive'"),
        (["--prompt", "w5 w6"], "--prompt needs --tokenizer"),
        (["--remeasure"], "--remeasure needs --save FILE"),
    ],
)
def test_contradictory_options_are_one_line_errors(
    model_file: Path, extra: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A budget strategy without a budget, a budget with another strategy, an unknown
    candidate or a re-measure without a save exits non-zero with one line before any model
    is built."""
    code = main(["tune-generate", f"{model_file}:build", *extra])
    assert code != 0 and says in capsys.readouterr().err


@pytest.mark.parametrize(
    ("factory", "extra", "says"),
    [
        ("linear", [], "the model has no generate()"),
        ("build", ["--prompt-lengths", "70"], "prompt 0 has 70 tokens"),
    ],
)
def test_a_request_the_tune_refuses_is_one_error_line(
    model_file: Path, factory: str, extra: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A factory whose model has no generate(), or a prompt beyond the model's 64 positions,
    exits 1 with the tune's refusal as the one line on stderr."""
    code = main(["tune-generate", f"{model_file}:{factory}", "--new-tokens", "2", *extra])
    err = capsys.readouterr().err.strip()
    assert code == 1 and says in err and "\n" not in err


def test_serving_a_saved_generator_needs_its_module_and_ray(
    model_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """serve on a generator save without --module says the pick is a recipe; with it but
    without Ray Serve it names the serve extra; both exit 1 with one line."""
    from aitune_fp.shell.serving.ray_serve import INSTALL_HINT
    from tests.tiny_generator import picked
    from tests.tiny_hf import tiny_llama

    saved = tmp_path / "gen.json"
    picked(tiny_llama(vocab=256)).save(saved)
    assert main(["serve", str(saved)]) == 1
    assert "a saved generator is a recipe: pass --module" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "ray", None)
    assert main(["serve", str(saved), "--module", f"{model_file}:build"]) == 1
    assert capsys.readouterr().err.strip() == f"aitune-fp: error: {INSTALL_HINT}"
