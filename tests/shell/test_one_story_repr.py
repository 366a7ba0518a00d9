"""``print(tuned)`` tells the report's story (issue 32 §3): the replayed demo transformer
case, where the verification moved the pick, shows the decision account's figure, speedup
and source, never the sweep's figure the decision no longer rests on."""

from __future__ import annotations

import torch

from aitune_fp.effects.backends.base import Built
from aitune_fp.effects.backends.registry import backend_by_name
from aitune_fp.effects.inputs.samples import normalise_samples
from aitune_fp.shell.tuned_module import TunedModule
from tests.core.test_one_story import B, demo_case


def test_print_tuned_shows_the_verification_figure_and_speedup() -> None:
    """The repr names the verified pick with the table's selected row: its figure, its
    speedup over the baseline and ``measured_in='verification'``."""
    record = demo_case()
    assert record.selection is not None and record.selection.backend == B
    built = Built(runner=lambda x: x)
    config = backend_by_name("inductor", precision="bfloat16", freezing=True)
    samples = normalise_samples([torch.zeros(1, 3)])
    tuned = TunedModule(built, config, record.selection, samples, record)
    text = repr(tuned)
    sweep_metric = f"metric={record.selection.result.metric:g}"
    assert f"backend={B!r}" in text and "batch_size=8" in text
    assert "metric=8000," in text and "speedup=2.30" in text, text
    assert "measured_in='verification'" in text and sweep_metric not in text, text
