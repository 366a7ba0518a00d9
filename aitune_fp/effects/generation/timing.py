"""Time the two phases as users feel them, under the project's steady-state stop rules.

Rules: TTFT is the wall time of one prefill (cache reset included); the inter-token latency
is the wall time of one decode step at the context reached after the prompt; each is timed
call by call under a ``CallRule`` (warm-up discarded, stop when stable or exhausted) and
summarised by its median. On CUDA each call is timed with CUDA events and HF ``generate``'s
token stamps synchronise the device first (:mod:`aitune_fp.effects.generation.devices`), so a
candidate's queued kernels count as HF's do.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch
from transformers import StoppingCriteria, StoppingCriteriaList

from aitune_fp.core.measure.stop_rules import CallRule, stable_window
from aitune_fp.core.stats.statistics import median
from aitune_fp.effects.generation import devices
from aitune_fp.effects.generation.loop import Stepper


def default_rule() -> CallRule:
    """The generation rule: 2 warm-up calls, stable over 5 calls (CV 15 %), at most 30."""
    return stable_window(warmup=2, window=5, max_cv=0.15, max_samples=30)


def hf_rule() -> CallRule:
    """The rule for whole ``generate`` runs (each already the median of its token gaps):
    1 warm-up run, stable over 3 runs (CV 15 %), at most 8."""
    return stable_window(warmup=1, window=3, max_cv=0.15, max_samples=8)


def prefill_rule() -> CallRule:
    """The rule for prefills (each a whole prompt, the longest call a candidate makes):
    1 warm-up call, stable over 3 calls (CV 15 %), at most 10."""
    return stable_window(warmup=1, window=3, max_cv=0.15, max_samples=10)


def time_calls(
    call: Callable[[], Any],
    rule: CallRule,
    before: Callable[[], Any] | None = None,
    device: torch.device | None = None,
) -> float:
    """Median time (ms) of ``call`` under ``rule`` (``before`` runs untimed first): CUDA
    events on a CUDA ``device``, else the wall clock."""
    state = rule.start()
    while True:
        if before is not None:
            before()
        state, decision = rule.step(state, devices.elapsed_ms(call, device))
        if decision.stop:
            return median(state.samples)


def time_stepper(
    stepper: Stepper, input_ids: torch.Tensor, new_tokens: int, rule: CallRule
) -> tuple[float, float]:
    """(TTFT ms, inter-token ms) of ``stepper`` on ``input_ids``: prefills under
    :func:`prefill_rule`, decode steps under ``rule``."""
    max_len = input_ids.shape[1] + new_tokens
    device = input_ids.device
    ttft = time_calls(
        lambda: stepper.prefill(input_ids, None, max_len), prefill_rule(), None, device
    )
    token = stepper.prefill(input_ids, None, max_len).argmax(-1, keepdim=True)
    steps = [0]

    def refill() -> None:
        if steps[0] >= new_tokens - 1:
            stepper.prefill(input_ids, None, max_len)
            steps[0] = 0
        steps[0] += 1

    return ttft, time_calls(lambda: stepper.decode(token), rule, refill, device)


class _Stamps(StoppingCriteria):
    """Records the time each new token is produced (the device synchronised first); never
    stops generation."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.times: list[float] = []

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor, **kwargs: Any) -> Any:
        devices.synchronize(self.device)
        self.times.append(time.perf_counter())
        return torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)


def hf_once(model: Any, input_ids: torch.Tensor, new_tokens: int) -> tuple[float, float]:
    """(TTFT ms, median inter-token ms) of one greedy HF ``generate`` run of ``new_tokens``."""
    stamps = _Stamps(devices.model_device(model))
    devices.synchronize(stamps.device)
    start = time.perf_counter()
    with torch.inference_mode():
        model.generate(
            input_ids,
            attention_mask=torch.ones_like(input_ids),
            max_new_tokens=new_tokens,
            min_new_tokens=new_tokens,
            do_sample=False,
            pad_token_id=0,
            stopping_criteria=StoppingCriteriaList([stamps]),
        )
    return phases(start, stamps.times)


def phases(start: float, stamps: Sequence[float]) -> tuple[float, float]:
    """(TTFT ms, median inter-token ms) of a run that began at ``start`` and produced a
    token at each of ``stamps`` (``perf_counter`` seconds; the gap is 0 with one token).

    >>> phases(0.0, [0.25, 0.5, 1.0])
    (250.0, 375.0)
    """
    gaps = [(b - a) * 1000.0 for a, b in itertools.pairwise(stamps)]
    return (stamps[0] - start) * 1000.0, median(gaps) if gaps else 0.0


def time_hf(
    model: Any, input_ids: torch.Tensor, new_tokens: int, rule: CallRule
) -> tuple[float, float]:
    """(TTFT ms, inter-token ms) of HF ``generate`` as users run it: each run stamps every
    token (a stopping criterion that never stops); TTFT is start to first token, ITL the
    median gap; runs repeat under ``rule`` on their wall time and the medians are kept."""
    runs: list[tuple[float, float]] = []
    time_calls(lambda: runs.append(hf_once(model, input_ids, new_tokens)), rule)
    kept = runs[rule.warmup :] or runs
    return median([r[0] for r in kept]), median([r[1] for r in kept])
