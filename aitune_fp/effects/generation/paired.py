"""One timed greedy run, as the verification's paired rounds time each participant.

Rules: a run generates ``tokens`` new tokens greedily from ``input_ids``: a stepper's
through the tight loop (:func:`~aitune_fp.effects.generation.loop.greedy`), HF
``generate`` as users run it (:func:`~aitune_fp.effects.generation.timing.hf_once`); every
token is stamped when it exists (the device synchronised first); the run's TTFT is its
start to the first token, its inter-token latency the median gap (0 with one token).
"""

from __future__ import annotations

import time
from typing import Any

import torch

from aitune_fp.effects.generation import devices
from aitune_fp.effects.generation.loop import Stepper, greedy
from aitune_fp.effects.generation.timing import hf_once, phases


def stepper_once(stepper: Stepper, input_ids: torch.Tensor, tokens: int) -> tuple[float, float]:
    """(TTFT ms, median inter-token ms) of one greedy run of ``stepper``."""
    device = input_ids.device
    stamps: list[float] = []

    def stamp(_token: torch.Tensor) -> None:
        devices.synchronize(device)
        stamps.append(time.perf_counter())

    devices.synchronize(device)
    start = time.perf_counter()
    greedy(stepper, input_ids, max_new_tokens=tokens, min_new_tokens=tokens, on_token=stamp)
    return phases(start, stamps)


def run_once(
    participant: Stepper | None, model: Any, input_ids: torch.Tensor, tokens: int
) -> tuple[float, float]:
    """One run of ``participant`` (``None``: HF ``generate`` of ``model``)."""
    if participant is None:
        return hf_once(model, input_ids, tokens)
    return stepper_once(participant, input_ids, tokens)
