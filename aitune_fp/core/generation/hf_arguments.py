"""Which Hugging Face ``generate`` arguments the tuned greedy loop honours, as pure data.

Rules:
- a generation setting listed in :data:`NEUTRAL` is accepted only at one of its neutral
  values (what greedy decoding with one beam does anyway); any other value is refused with
  one line naming the argument, its value and what to do instead;
- settings not listed (sampling knobs such as ``temperature`` under ``do_sample=False``,
  beam-only knobs at one beam, the cache settings) are ignored, as ``generate`` ignores them;
- a call argument that is not a generation setting (``logits_processor``, ``assistant_model``,
  ``token_type_ids``…) is refused unless it is ``None`` or an empty list;
- nothing is ever silently changed: a refusal is a value the caller raises.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from pyrsistent import pmap

NEUTRAL: Final = pmap(
    {
        "do_sample": (None, False),
        "num_beams": (None, 1),
        "num_beam_groups": (None, 1),
        "num_return_sequences": (None, 1),
        "penalty_alpha": (None,),
        "repetition_penalty": (None, 1.0),
        "encoder_repetition_penalty": (None, 1.0),
        "no_repeat_ngram_size": (None, 0),
        "encoder_no_repeat_ngram_size": (None, 0),
        "bad_words_ids": (None,),
        "force_words_ids": (None,),
        "sequence_bias": (None,),
        "suppress_tokens": (None,),
        "begin_suppress_tokens": (None,),
        "forced_bos_token_id": (None,),
        "forced_eos_token_id": (None,),
        "exponential_decay_length_penalty": (None,),
        "stop_strings": (None,),
        "guidance_scale": (None, 1.0),
        "max_time": (None,),
        "output_scores": (None, False),
        "output_logits": (None, False),
        "output_attentions": (None, False),
        "output_hidden_states": (None, False),
        "prompt_lookup_num_tokens": (None,),
        "assistant_early_exit": (None,),
        "dola_layers": (None,),
        "watermarking_config": (None,),
    }
)

_HINTS: Final = pmap(
    {
        "do_sample": "it decodes greedily: pass do_sample=False, or call the model's own generate",
        "num_beams": "it decodes greedily with one beam: pass num_beams=1",
    }
)
_DEFAULT_HINT: Final = "call the model's own generate for this"


def _neutral(name: str, value: object) -> bool:
    allowed = NEUTRAL.get(name)
    if allowed is None:
        return True
    return any(value is a or (a is not None and value == a) for a in allowed)


def _empty(value: object) -> bool:
    return value is None or (isinstance(value, list | tuple) and not value)


def refusals(settings: Mapping[str, object], extra: Mapping[str, object]) -> tuple[str, ...]:
    """One line per argument the tuned generator cannot honour (see the module rules).

    >>> refusals({"do_sample": True, "temperature": 0.7}, {})[0].split(":")[0]
    'generate(do_sample=True) is not supported by the tuned generator'
    >>> refusals({"do_sample": False, "num_beams": 1}, {"logits_processor": []})
    ()
    """
    lines = [
        f"generate({name}={value!r}) is not supported by the tuned generator: "
        f"{_HINTS.get(name, _DEFAULT_HINT)}"
        for name, value in sorted(settings.items())
        if not _neutral(name, value)
    ]
    lines += [
        f"generate({name}=…) is not supported by the tuned generator: {_DEFAULT_HINT}"
        for name, value in sorted(extra.items())
        if not _empty(value)
    ]
    return tuple(lines)
