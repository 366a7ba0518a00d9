"""What a generation tune's plot shows, as data (pure).

Rules: a record is a generation tune's when some outcome's profile holds generation points
(:func:`is_generation`); each profiled backend (the baseline first) gives two curves:
tokens/s against batch size at the first prompt length measured, and TTFT against prompt
length at the first batch size measured (the primary point's batch and length), each
sorted by its x and each point as measured in its sweep.

>>> from aitune_fp.core.generation.records import GenerationResult
>>> from aitune_fp.core.generation.run_record import GenerationRun, generation_record
>>> from aitune_fp.core.generation.strategies import max_tokens_per_s
>>> rows = [GenerationResult("hf", "e", "e", 1, 8, 4, 20.0, 8.0),
...         GenerationResult("hf", "e", "e", 1, 16, 4, 30.0, 8.0),
...         GenerationResult("hf", "e", "e", 2, 8, 4, 25.0, 9.0)]
>>> record = generation_record(max_tokens_per_s, rows, "hf", GenerationRun("lm", "cpu",
...                            (8, 16), (1, 2), 4, {}))
>>> curves = generation_curves(record)
>>> [(c.backend, c.ttft_by_length) for c in curves]
[('hf', ((8, 20.0), (16, 30.0)))]
>>> [round(y, 1) for _, y in curves[0].tokens_by_batch]
[90.9, 153.8]
"""

from __future__ import annotations

from dataclasses import dataclass

from aitune_fp.core.record.run_record import RunRecord


@dataclass(frozen=True, slots=True)
class GenerationCurves:
    """One backend's curves: (batch size, tokens/s) and (prompt length, TTFT ms)."""

    backend: str
    baseline: bool
    tokens_by_batch: tuple[tuple[int, float], ...]
    ttft_by_length: tuple[tuple[int, float], ...]


def is_generation(record: RunRecord) -> bool:
    """Whether ``record`` is a generation tune's (some profile holds generation points)."""
    return any(o.profile is not None and o.profile.generation for o in record.outcomes)


def generation_curves(record: RunRecord) -> tuple[GenerationCurves, ...]:
    """Every profiled backend's curves (see the module's rules)."""
    out = []
    for outcome in record.outcomes:
        generation = outcome.profile.generation if outcome.profile is not None else None
        if generation is None:
            continue
        first = generation.primary
        by_batch = {
            p.batch: p.tokens_per_s for p in generation.points if p.prompt_len == first.prompt_len
        }
        by_length = {p.prompt_len: p.ttft_ms for p in generation.points if p.batch == first.batch}
        out.append(
            GenerationCurves(
                outcome.backend,
                outcome is record.baseline,
                tuple(sorted(by_batch.items())),
                tuple(sorted(by_length.items())),
            )
        )
    return tuple(out)
