"""``aitune-fp tune-generate --out DIR`` writes the run record a tune writes: run.json decodes
strictly, and ``report`` and ``reselect --strategy min-ttft`` read it offline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from aitune_fp.cli.main import main
from aitune_fp.core.record.run_record import loads

MODEL = """
from tests.tiny_hf import tiny_llama

def build():
    return tiny_llama(vocab=256)
"""


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One tune of the tiny Llama (two prompt lengths, two candidates) with --out."""
    folder = tmp_path_factory.mktemp("gen")
    (folder / "lm.py").write_text(MODEL)
    assert main([*_argv(folder), "--out", str(folder / "out")]) == 0
    return folder / "out"


def _argv(folder: Path) -> list[str]:
    """The tune's command line (its decision cache in ``folder``)."""
    argv = ["tune-generate", f"{folder / 'lm.py'}:build", "--prompt-lengths", "6,9"]
    argv += ["--new-tokens", "3", "--candidates", "eager_static,eager_static_bf16"]
    return [*argv, "--cache-dir", str(folder / "cache")]


def test_run_json_decodes_strictly_with_every_point(out: Path) -> None:
    """run.json reads through the strict codec: HF generate is the baseline, each measured
    candidate's profile holds both prompt lengths' points, and the selection is one of them;
    report.md and plot.png are written beside it."""
    record = loads((out / "run.json").read_text())
    assert record.baseline is not None and record.baseline.backend == "hf_eager_dynamic"
    names = {c.backend for c in record.candidates}
    assert names == {"eager_static", "eager_static_bf16"}
    static = next(c for c in record.candidates if c.backend == "eager_static")
    assert static.profile is not None and static.profile.generation is not None
    assert [p.prompt_len for p in static.profile.generation.points] == [6, 9]
    assert record.selection is not None
    assert record.selection.backend in names | {"hf_eager_dynamic"}
    assert json.loads((out / "run.json").read_text())["strategy"]["strategy"] == "max_tokens_per_s"
    assert (out / "report.md").read_text().startswith("# aitune_fp run: LlamaForCausalLM")
    assert (out / "plot.png").read_bytes().startswith(b"\x89PNG")  # tokens/s and TTFT


def test_report_and_reselect_read_it_offline(
    out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """report prints the stored run; reselect --strategy min-ttft re-judges it and stores a
    run whose strategy is min_ttft and whose pick has the lowest TTFT among the usable."""
    assert main(["report", str(out / "run.json")]) == 0
    assert "eager_static" in capsys.readouterr().out
    again = tmp_path / "ttft.json"
    assert (
        main(["reselect", str(out / "run.json"), "--strategy", "min-ttft", "--out", str(again)])
        == 0
    )
    record = loads(again.read_text())
    assert record.strategy["strategy"] == "min_ttft" and record.selection is not None
    outcomes = [o for o in (record.baseline, *record.candidates) if o and o.profile]
    ttft = {o.backend: o.profile.generation.primary.ttft_ms for o in outcomes}  # type: ignore[union-attr]
    picked = record.selection.backend
    assert ttft[picked] == min(ttft.values())


def test_replay_finds_every_decision_the_recorded_one(
    out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """replay re-runs the generation session from run.json's event log to the same pick."""
    capsys.readouterr()
    assert main(["replay", str(out / "run.json")]) == 0
    assert "every decision is the recorded one" in capsys.readouterr().out


def test_a_second_unchanged_cli_tune_rechecks_the_stored_pick(
    out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same command again is a decision cache hit: it says it re-verified the stored
    pick, with its own re-verification line, and its run.json keeps the stored candidates."""
    capsys.readouterr()
    again = out.parent / "again"
    assert main([*_argv(out.parent), "--out", str(again)]) == 0
    said = capsys.readouterr().out
    assert "decision cache hit" in said and "re-verified against" in said
    assert "Re-verification (this run)" in said
    record = loads((again / "run.json").read_text())
    assert {c.backend for c in record.candidates} == {"eager_static", "eager_static_bf16"}
    assert record.provenance.cache_hit and record.reverification is not None
