"""A ``POST /generate`` request and its timing, as pure values.

Rules:
- the body is a JSON object with exactly one prompt field: ``input_ids`` (a list of token
  ids, or a list of equally long lists: one row each) or ``text`` (a string or a list of
  strings; needs the server's tokenizer); ``attention_mask`` (same shape as ``input_ids``,
  0 for left padding) is optional;
- every other field is a ``generate`` keyword (``max_new_tokens``, ``min_new_tokens``,
  ``eos_token_id``…) from the accepted names; an unknown field, a missing or doubled
  prompt, ragged rows or a token id outside the vocabulary is a :class:`PayloadError`
  (422), never a model call;
- the timing of a request is measured from its start: TTFT to the first new token, the
  inter-token latency as the mean gap between successive new tokens (``None`` with one
  token), tokens/s as rows × new tokens over the total.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyrsistent import PMap, pmap

from aitune_fp.core.serving.schema import PayloadError

Rows = tuple[tuple[int, ...], ...]
_TOKENIZER = "serve --tokenizer"


@dataclass(frozen=True, slots=True)
class GenerateRequest:
    """The prompt (token rows or texts), its mask and the ``generate`` keywords."""

    input_ids: Rows | None
    texts: tuple[str, ...] | None
    attention_mask: Rows | None
    options: PMap[str, Any]


def _rows(value: Any, name: str, vocab: int | None) -> Rows | PayloadError:
    rows = value if value and isinstance(value[0], list) else [value]
    if not isinstance(value, list) or not value or not all(isinstance(r, list) for r in rows):
        return PayloadError(422, f"{name} must be a list of token ids or a list of such lists")
    if len({len(r) for r in rows}) != 1 or not rows[0]:
        return PayloadError(422, f"{name} rows must be non-empty and equally long (pad left)")
    flat = [v for r in rows for v in r]
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in flat):
        return PayloadError(422, f"{name} must hold integers")
    if vocab is not None and not all(0 <= v < vocab for v in flat):
        return PayloadError(422, f"{name} holds an id outside the vocabulary [0, {vocab})")
    return tuple(tuple(r) for r in rows)


def _texts(value: Any) -> tuple[str, ...] | PayloadError:
    texts = [value] if isinstance(value, str) else value
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        return PayloadError(422, "text must be a string or a non-empty list of strings")
    return tuple(texts)


def _prompt(
    doc: Mapping[str, Any], vocab: int | None, has_tokenizer: bool
) -> tuple[Rows | None, tuple[str, ...] | None] | PayloadError:
    if ("input_ids" in doc) == ("text" in doc):
        return PayloadError(422, "send exactly one of input_ids and text")
    if "text" in doc:
        if not has_tokenizer:
            return PayloadError(422, f"this server has no tokenizer ({_TOKENIZER}): send input_ids")
        texts = _texts(doc["text"])
        return texts if isinstance(texts, PayloadError) else (None, texts)
    rows = _rows(doc["input_ids"], "input_ids", vocab)
    return rows if isinstance(rows, PayloadError) else (rows, None)


def parse_generate(
    doc: Any, accepted: Collection[str], vocab: int | None, has_tokenizer: bool
) -> GenerateRequest | PayloadError:
    """The request in the decoded JSON ``doc`` (see the module rules).

    >>> doc = {"input_ids": [1, 2], "max_new_tokens": 3}
    >>> request = parse_generate(doc, ["max_new_tokens"], 9, False)
    >>> request.input_ids, dict(request.options)
    (((1, 2),), {'max_new_tokens': 3})
    >>> parse_generate({"text": "hi"}, (), 10, False).reason
    'this server has no tokenizer (serve --tokenizer): send input_ids'
    """
    if not isinstance(doc, dict):
        return PayloadError(422, "the body must be a JSON object")
    prompt = _prompt(doc, vocab, has_tokenizer)
    if isinstance(prompt, PayloadError):
        return prompt
    mask: Rows | None = None
    if "attention_mask" in doc:
        given = _rows(doc["attention_mask"], "attention_mask", None)
        if isinstance(given, PayloadError):
            return given
        ids = prompt[0]
        if ids is None or len(given) != len(ids) or len(given[0]) != len(ids[0]):
            return PayloadError(422, "attention_mask must have input_ids' shape")
        mask = given
    options = {k: v for k, v in doc.items() if k not in ("input_ids", "text", "attention_mask")}
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        return PayloadError(422, f"unknown field {unknown[0]!r}")
    return GenerateRequest(prompt[0], prompt[1], mask, pmap(options))


def request_timing(start: float, stamps: Sequence[float], rows: int) -> dict[str, float | None]:
    """TTFT, mean inter-token latency, total (ms), new tokens and tokens/s of one request.

    >>> request_timing(0.0, [0.010, 0.012, 0.016], 2)
    {'ttft_ms': 10.0, 'itl_ms': 3.0, 'total_ms': 16.0, 'new_tokens': 3, 'tokens_per_s': 375.0}
    """
    if not stamps:
        return {**_NO_TIMING, "new_tokens": 0}
    total = (stamps[-1] - start) * 1000.0
    gaps = [(b - a) * 1000.0 for a, b in itertools.pairwise(stamps)]
    per_s = _ms(rows * len(stamps) * 1000.0 / total) if total > 0 else None
    itl = _ms(sum(gaps) / len(gaps)) if gaps else None
    return {
        "ttft_ms": _ms((stamps[0] - start) * 1000.0),
        "itl_ms": itl,
        "total_ms": _ms(total),
        "new_tokens": len(stamps),
        "tokens_per_s": per_s,
    }


_NO_TIMING: dict[str, float | None] = dict.fromkeys(
    ("ttft_ms", "itl_ms", "total_ms", "tokens_per_s")
)


def _ms(value: float) -> float:
    return round(value, 6)
