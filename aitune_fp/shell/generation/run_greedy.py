"""Run a resolved ``generate`` call through a stepper, shaped as ``generate`` returns it.

Rules: the streamer (when given) gets the prompt first, then each step's new tokens, then
``end()``, as ``generate`` feeds it; the result is the sequences (prompt + new tokens) or,
with ``return_dict_in_generate``, a ``GenerateDecoderOnlyOutput`` holding them (no scores,
no cache: the static cache stays inside the stepper).
"""

from __future__ import annotations

from typing import Any

from aitune_fp.effects.generation.loop import Stepper, greedy
from aitune_fp.shell.generation.hf_call import GreedyCall


def run_greedy(stepper: Stepper, call: GreedyCall, streamer: Any = None) -> Any:
    """The sequences ``call`` produces over ``stepper`` (see the module rules)."""
    if streamer is not None:
        streamer.put(call.input_ids.cpu())
    try:
        sequences = greedy(
            stepper,
            call.input_ids,
            call.attention_mask,
            max_new_tokens=call.max_new_tokens,
            min_new_tokens=call.min_new_tokens,
            eos_token_id=call.eos_token_id,
            pad_token_id=call.pad_token_id,
            on_token=None if streamer is None else (lambda t: streamer.put(t.reshape(-1).cpu())),
        )
    finally:
        if streamer is not None:
            streamer.end()
    if not call.return_dict:
        return sequences
    from transformers.generation.utils import GenerateDecoderOnlyOutput

    return GenerateDecoderOnlyOutput(sequences=sequences)  # type: ignore[arg-type]
