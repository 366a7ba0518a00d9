"""A generation tune's run record, as ``tune-generate --out DIR`` writes it.

Rules: the record is the tune's session's (:attr:`TunedGenerator.run
<aitune_fp.shell.generation.tuned_generator.TunedGenerator.run>`) with the command's model
name and device; a generator without one (a loaded save) gets
:func:`~aitune_fp.core.generation.run_record.generation_record`'s (pure) with this machine's
environment fingerprint; the files are written as a tune's
(:func:`aitune_fp.cli.outputs.write_run`).
"""

from __future__ import annotations

from dataclasses import replace

from aitune_fp.core.generation.run_record import GenerationRun, generation_record
from aitune_fp.core.record.run_record import RunRecord
from aitune_fp.core.strategy import Strategy
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
        facts.model,
        facts.device,
        facts.prompt_lengths,
        facts.batch_sizes,
        facts.new_tokens,
        environment_fingerprint(facts.device),
    )
    return generation_record(strategy, tuned.results, BASELINE, found)
