"""A generation tune's outputs under ``--out DIR``: ``run.json`` and ``report.md``, as a tune's.

Rules: the run record is :func:`~aitune_fp.core.generation.run_record.generation_record`'s
(pure) with this machine's environment fingerprint; ``run.json`` is written through the
strict codec (``aitune-fp report``, ``reselect`` read it offline) and ``report.md`` is its
Markdown report; both are written atomically.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from aitune_fp.core.generation.run_record import GenerationRun, generation_record
from aitune_fp.core.record.run_record import RunRecord, dumps
from aitune_fp.core.report.markdown import render_markdown
from aitune_fp.core.strategy import Strategy
from aitune_fp.effects.atomic import write_text
from aitune_fp.effects.machine.environment import environment_fingerprint
from aitune_fp.shell.generation.candidates import BASELINE
from aitune_fp.shell.generation.tuned_generator import TunedGenerator


def run_record(tuned: TunedGenerator, strategy: Strategy, facts: GenerationRun) -> RunRecord:
    """``tuned``'s run record: the session's when its tune kept one, with ``facts``' model
    name and device, else one made from its results under ``strategy``
    (``facts.environment`` filled in here)."""
    if tuned.run is not None:
        return replace(tuned.run, model=facts.model, device=facts.device)
    found = GenerationRun(
        facts.model, facts.device, facts.prompt_lengths, facts.batch_sizes, facts.new_tokens,
        environment_fingerprint(facts.device),
    )  # fmt: skip
    return generation_record(strategy, tuned.results, BASELINE, found)


def write_outputs(record: RunRecord, out: str | Path) -> tuple[Path, Path]:
    """Write ``run.json`` and ``report.md`` of ``record`` into the folder ``out``."""
    folder = Path(out)
    run = write_text(folder / "run.json", dumps(record))
    return run, write_text(folder / "report.md", render_markdown(record))
