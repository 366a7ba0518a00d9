"""A generation tune as the project's ``RunRecord``: what ``run.json`` stores, so ``report``
and ``reselect`` read a generation tune as they read any tune.

Rules: every candidate (the baseline, HF ``generate``, included) is one ``BackendOutcome`` of
kind ``generation`` whose config names each phase's backend and its precision (the dtype
its backend names carry, ``<kind>-static-<dtype>``; float32 otherwise); a measured, accurate
candidate has a profile whose ``generation`` holds all its points (the primary point first, then the
others in the order measured) and whose latency per batch size is each point's whole run;
a failed or refused candidate has its failure (the stage as :func:`~aitune_fp.core.
generation.choose.candidate_of` says); every candidate's teacher-forced figures are its
``validation``. The selection is the one fold's over those outcomes (the same pick
:func:`~aitune_fp.core.generation.choose.choose` makes), or its error; the strategy is stored
as its registry config, so ``reselect --strategy min-ttft`` re-judges it offline.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pyrsistent import PMap, pmap
from returns.pipeline import is_successful

from aitune_fp.core.accuracy.bounds import CONFIDENCE
from aitune_fp.core.fold import tune
from aitune_fp.core.generation.choose import candidate_of
from aitune_fp.core.generation.records import GenerationResult
from aitune_fp.core.measure.generation_profile import GenerationPoint, GenerationProfile
from aitune_fp.core.record.run_record import BackendOutcome, RunRecord
from aitune_fp.core.records import Candidate, Profile
from aitune_fp.core.strategies.registry import strategy_config
from aitune_fp.core.strategy import Strategy


@dataclass(frozen=True, slots=True)
class GenerationRun:
    """What a generation tune was: the model's name, the device, the prompts' lengths, the
    batch sizes, the new tokens per run and the environment it ran in."""

    model: str
    device: str
    prompt_lengths: tuple[int, ...]
    batch_sizes: tuple[int, ...]
    new_tokens: int
    environment: Mapping[str, object]


def _point(r: GenerationResult) -> GenerationPoint:
    return GenerationPoint(r.batch, r.prompt_len, r.new_tokens, r.ttft_ms, r.itl_ms)


def profile_of(rows: Sequence[GenerationResult]) -> Profile:
    """The profile of one candidate's measured ``rows`` (the primary point first): every
    point, each batch size's whole runs as its latencies, the primary's accuracy."""
    points = tuple(_point(r) for r in rows)
    latencies: dict[int, list[float]] = {}
    for point in points:
        latencies.setdefault(point.batch, []).append(point.total_ms)
    primary = rows[0]
    profile = candidate_of(primary).unwrap()
    generation = GenerationProfile(points, primary.prefill, primary.decode)
    return Profile(primary.name, latencies, accuracy=profile.accuracy, generation=generation)


def outcome_config(primary: GenerationResult) -> PMap[str, str]:
    """A candidate's config as its record row shows it: each phase's backend, the precision.

    >>> config = outcome_config(GenerationResult("a", "e", "eager-static-bfloat16", 1, 8, 4, 1, 1))
    >>> config["prefill"], config["decode"], config["precision"]
    ('e', 'eager-static-bfloat16', 'bfloat16')
    """
    return pmap(
        {"prefill": primary.prefill, "decode": primary.decode, "precision": primary.precision}
    )


def validation_of(primary: GenerationResult) -> PMap[str, float]:
    """A candidate's teacher-forced figures as its record row holds them: top-1 agreement
    and RMS relative error, and where the policy judged a bound, the bound, its confidence
    and the positions it rests on (the keys every tune's bounded figures use); for a reduced
    candidate, the mean KL divergence and the clear-margin positions with their agreement
    the policy read.

    >>> r = GenerationResult("a", "e", "e", 1, 8, 4, 1, 1, positions=320, top1_lower=0.99)
    >>> v = validation_of(r)
    >>> v["top1_agreement_lower"], v["judged_rows"]
    (0.99, 320.0)
    >>> q = GenerationResult("q", "e", "openvino-static-float32-int8w", 1, 8, 4, 1, 1, kl=0.001,
    ...                      clear_positions=12, clear_top1=1.0)
    >>> sorted(k for k in validation_of(q) if "clear" in k or "kl" in k)
    ['clear_positions', 'clear_top1_agreement', 'kl_divergence']
    """
    figures = {"top1_agreement": primary.top1, "rms_rel_error": primary.rms_rel}
    if primary.top1_lower is not None:
        figures |= {
            "top1_agreement_lower": primary.top1_lower,
            "bound_confidence": CONFIDENCE,
            "judged_rows": float(primary.positions),
        }
    if primary.kl is not None and primary.precision != "float32":
        figures |= {"kl_divergence": primary.kl, "clear_positions": float(primary.clear_positions)}
        if primary.clear_top1 is not None:
            figures |= {"clear_top1_agreement": primary.clear_top1}
    return pmap(figures)


def _outcome(rows: Sequence[GenerationResult]) -> BackendOutcome:
    primary = rows[0]
    config = outcome_config(primary)
    validation = validation_of(primary)
    made = candidate_of(primary)
    profile = profile_of(rows) if is_successful(made) else None
    failure = None if profile is not None else made.failure()
    return BackendOutcome(
        primary.name, "generation", primary.name, config, profile, failure, validation=validation
    )


def _by_name(results: Sequence[GenerationResult]) -> dict[str, list[GenerationResult]]:
    grouped: dict[str, list[GenerationResult]] = {}
    for r in results:
        grouped.setdefault(r.name, []).append(r)
    return grouped


def _as_candidate(outcome: BackendOutcome) -> Candidate:
    from returns.result import Failure, Success

    if outcome.profile is not None:
        return Success(outcome.profile)
    assert outcome.failure is not None  # an outcome here has a profile or a failure
    return Failure(outcome.failure)


def generation_record(
    strategy: Strategy, results: Sequence[GenerationResult], baseline: str, run: GenerationRun
) -> RunRecord:
    """The run record of a generation tune (see the module rules).

    >>> from aitune_fp.core.generation.strategies import max_tokens_per_s
    >>> rows = [GenerationResult("hf", "e", "e", 1, 8, 4, 20.0, 8.0),
    ...         GenerationResult("fast", "e", "i", 1, 8, 4, 10.0, 3.0)]
    >>> run = GenerationRun("lm", "cpu", (8,), (1,), 4, {})
    >>> generation_record(max_tokens_per_s, rows, "hf", run).selection.backend
    'fast'
    """
    outcomes = {name: _outcome(rows) for name, rows in _by_name(results).items()}
    base = outcomes.pop(baseline)
    others = tuple(outcomes.values())
    chosen = tune(strategy, [_as_candidate(o) for o in others], _as_candidate(base))
    spec = {"prompt_lengths": list(run.prompt_lengths), "batch_sizes": list(run.batch_sizes)}
    return RunRecord(
        run.model,
        run.device,
        pmap(strategy_config(strategy, list(outcomes))),
        base,
        others,
        chosen.value_or(None),
        chosen.swap().value_or(None),
        pmap(run.environment),
        pmap({**spec, "new_tokens": run.new_tokens}),
        None,
    )
