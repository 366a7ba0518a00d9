"""A tune's saved pick, loaded in a fresh Python process over a model rebuilt by a seeded
factory, generates the tuning process's greedy tokens and is re-measured there: the pick's
and HF ``generate``'s tokens/s side by side with the tune's own figures."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch

transformers = pytest.importorskip("transformers")

from aitune_fp import TunedGenerator, tune_generate  # noqa: E402
from aitune_fp.core.generation import GenerationPick  # noqa: E402
from aitune_fp.shell.generation.fresh import PointFigures, fresh_measure  # noqa: E402
from aitune_fp.shell.io import perform  # noqa: E402
from tests import tiny_hf  # noqa: E402

pytestmark = pytest.mark.heavy

NEW = 6
PROMPT = torch.randint(3, 256, (7,), generator=torch.Generator().manual_seed(11))
IDS = PROMPT.repeat(2, 1)


@pytest.fixture(scope="module")
def model() -> Any:
    """The shared tiny Llama, vocabulary 256 (seeded: the same weights in every process)."""
    return tiny_hf.tiny_llama(vocab=256)


@pytest.fixture(scope="module")
def tuned(model: Any) -> TunedGenerator:
    """A real tune over the eager static-cache candidates (no compile)."""
    names = ["eager_static", "eager_static_1thread"]
    made = tune_generate(model, [PROMPT], new_tokens=NEW, batch_sizes=(2,), candidates=names)
    return perform(made).unwrap()


PLANTED = 1e7
"""The TTFT and ITL (ms, hours) the saved record claims for every candidate: figures that a
fresh process copying them would report, and that no real measurement comes near."""


def planted(tuned: TunedGenerator) -> TunedGenerator:
    """``tuned`` with every result's TTFT and ITL replaced by :data:`PLANTED`."""
    rows = tuple(replace(r, ttft_ms=PLANTED, itl_ms=PLANTED) for r in tuned.results)
    pick = next(r for r in rows if r == replace(tuned.pick, ttft_ms=PLANTED, itl_ms=PLANTED))
    choice = GenerationPick(pick, tuned.choice.reason, tuned.choice.fell_back)
    return TunedGenerator(tuned.model, choice, rows, tuned.wall_s)


@pytest.fixture(scope="module")
def fresh(tuned: TunedGenerator, tmp_path_factory: pytest.TempPathFactory) -> PointFigures:
    """The saved pick, its recorded figures planted (:func:`planted`), re-measured in a new
    Python over ``tests.tiny_hf:tiny_llama``."""
    saved = tmp_path_factory.mktemp("fresh") / "gen.json"
    planted(tuned).save(saved)
    return fresh_measure(
        saved, "tests.tiny_hf:tiny_llama", IDS, NEW, kwargs={"vocab": 256}, timeout_s=600
    )


def test_the_fresh_process_generates_the_tuning_process_tokens(
    tuned: TunedGenerator, fresh: PointFigures, model: Any
) -> None:
    """The fresh process loads the tune's own pick and its greedy tokens equal this
    process's, which equal the model's fp32 ``generate``."""
    want = tuned.generate(IDS, max_new_tokens=NEW, min_new_tokens=NEW)
    assert fresh.pick == tuned.pick.name
    assert fresh.tokens == want.tolist()
    hf = model.generate(IDS, max_new_tokens=NEW, min_new_tokens=NEW, do_sample=False)
    assert torch.equal(want, hf)


def test_the_fresh_figures_stand_beside_the_tunes(
    tuned: TunedGenerator, fresh: PointFigures
) -> None:
    """The fresh figures are measured at the tune's primary point (batch 2, prompt 7), in
    the fresh process (the saved record's planted hours are never reported: a copy of the
    recorded figures fails), with finite, positive tokens/s for the pick and HF to set
    beside the tune's."""
    pick = tuned.pick
    assert (fresh.batch, fresh.prompt_len, fresh.new_tokens) == (2, 7, NEW)
    assert (pick.batch, pick.prompt_len, pick.new_tokens) == (2, 7, NEW)
    for ms in (fresh.ttft_ms, fresh.itl_ms, fresh.hf_ttft_ms, fresh.hf_itl_ms):
        assert 0 < ms < PLANTED / 100
    for figure in (fresh.tokens_per_s, fresh.hf_tokens_per_s, fresh.speedup):
        assert math.isfinite(figure) and figure > 0
    assert fresh.speedup == pytest.approx(fresh.tokens_per_s / fresh.hf_tokens_per_s)
    assert pick.tokens_per_s > 0 and pick.name == fresh.pick


def test_a_failing_child_says_why(tmp_path: Path) -> None:
    """A save that does not exist makes the child fail; the error carries its stderr (the
    LoadError naming the missing save)."""
    with pytest.raises(
        RuntimeError, match=r"(?s)fresh-process measure failed.*LoadError.*gen\.json.*manifest"
    ):
        fresh_measure(tmp_path / "gen.json", "tests.tiny_hf:tiny_llama", IDS, 2, timeout_s=300)
