"""What a generation verification times, and what its paired rounds decide (pure).

Rules:
- a generation tune's verification is the session's (:mod:`aitune_fp.core.session`): the
  pick, its runner-up and the baseline (HF ``generate``), each at the primary point, timed
  in interleaved rounds and judged by the same evidence rules as every tune
  (:mod:`aitune_fp.core.verification.judge`);
- one round's sample of a participant is one greedy run of :data:`VERIFY_TOKENS` new tokens
  (fewer when the tune asks for fewer), as the strategy judges it at the tune's new tokens
  (:func:`round_sample`): the run's time to first token under ``min_ttft``, its median
  inter-token gap under ``min_itl``, else the ms per new token of a generation of the
  tune's length (TTFT plus a gap per further token, over the tokens, as a sweep point's
  tokens/s is made): at the row's batch size ``B``, ``B * 1000 / sample`` is that
  generation's tokens/s, so the report turns a median sample into the figure it shows
  (:func:`~aitune_fp.core.report.sources.metric_kind`);
- the figures a verified row shows are the medians of its rounds' TTFT and inter-token
  latency (:func:`verified_result`), and the row says it was measured there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Final

from aitune_fp.core.generation.records import GenerationResult
from aitune_fp.core.stats.statistics import median

VERIFY_TOKENS: Final = 8
"""New tokens per verification run: enough for a stable median gap, short at 0.5B sizes."""


def verify_tokens(new_tokens: int) -> int:
    """The new tokens of one verification run.

    >>> verify_tokens(64), verify_tokens(3)
    (8, 3)
    """
    return max(1, min(new_tokens, VERIFY_TOKENS))


def round_sample(metric: str, ttft_ms: float, itl_ms: float, tokens: int) -> float:
    """One run's sample as the strategy's ``metric`` judges it (see the module's rules).

    >>> round_sample("ttft", 10.0, 2.0, 4), round_sample("itl", 10.0, 2.0, 4)
    (10.0, 2.0)
    >>> round_sample("tokens/s", 10.0, 2.0, 4)
    4.0
    """
    if metric == "ttft":
        return ttft_ms
    if metric == "itl":
        return itl_ms
    return (ttft_ms + max(tokens - 1, 0) * itl_ms) / max(tokens, 1)


def verified_result(
    result: GenerationResult, runs: Sequence[tuple[float, float]]
) -> GenerationResult:
    """``result`` with its TTFT and inter-token latency the medians of the verification's
    ``runs`` (unchanged without runs).

    >>> r = GenerationResult("a", "e", "e", 1, 8, 4, 10.0, 3.0)
    >>> v = verified_result(r, [(9.0, 2.0), (11.0, 2.5), (10.0, 2.2)])
    >>> v.ttft_ms, v.itl_ms
    (10.0, 2.2)
    """
    if not runs:
        return result
    return replace(
        result, ttft_ms=median([r[0] for r in runs]), itl_ms=median([r[1] for r in runs])
    )
