"""What a generation tune is asked, as a value, and the one-line refusal of a bad request.

Rules: a request is refused, before anything is built or timed, when the model has no
``generate``, when its config has no vocabulary size (an integer >= 1), when no prompt is
given or a prompt has no token, when ``new_tokens`` or a batch size is below 1, when a
candidate name is unknown, or when a prompt with its new tokens needs more positions than
the model has (``max_position_embeddings``, when the config states it). The refusal is one
line naming the problem (:func:`refusal`); ``None`` means the request can run.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class GenerationRequest:
    """The facts of a tune request: what the model offers and what is asked of it."""

    has_generate: bool
    vocab_size: object
    positions: int | None
    prompt_lengths: tuple[int, ...]
    new_tokens: int
    batch_sizes: tuple[int, ...]
    candidates: tuple[str, ...] = ()


def model_refusal(has_generate: bool, vocab_size: object) -> str | None:
    """Why a model cannot be tuned for generation (no ``generate``, no vocabulary size).

    >>> model_refusal(False, 256)
    'the model has no generate(): tune_generate needs a causal language model'
    >>> model_refusal(True, None)
    "the model's config has no vocab_size (an integer >= 1), got None"
    """
    if not has_generate:
        return "the model has no generate(): tune_generate needs a causal language model"
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < 1:
        return f"the model's config has no vocab_size (an integer >= 1), got {vocab_size!r}"
    return None


def _size_problem(request: GenerationRequest) -> str | None:
    if request.new_tokens < 1:
        return f"new_tokens must be >= 1, got {request.new_tokens}"
    if not request.batch_sizes or min(request.batch_sizes) < 1:
        return f"batch_sizes must be integers >= 1, got {list(request.batch_sizes)}"
    return None


def _prompt_problem(request: GenerationRequest) -> str | None:
    lengths = request.prompt_lengths
    if not lengths:
        return "no prompts given: tune_generate needs at least one prompt"
    empty = [i for i, n in enumerate(lengths) if n < 1]
    if empty:
        return f"prompt {empty[0]} has no tokens"
    longest = max(lengths)
    if request.positions is not None and longest + request.new_tokens > request.positions:
        return (
            f"prompt {lengths.index(longest)} has {longest} tokens: with {request.new_tokens} "
            f"new tokens it needs more than the model's {request.positions} positions"
        )
    return None


def refusal(request: GenerationRequest, known: Collection[str]) -> str | None:
    """Why ``request`` cannot run, in one line (``None``: it can); ``known`` names the
    candidates.

    >>> ok = GenerationRequest(True, 256, 64, (8,), 4, (1,))
    >>> refusal(ok, ()) is None
    True
    >>> from dataclasses import replace
    >>> refusal(replace(ok, prompt_lengths=(70,)), ())
    "prompt 0 has 70 tokens: with 4 new tokens it needs more than the model's 64 positions"
    >>> refusal(replace(ok, candidates=("nope",)), ("eager_static",))
    "unknown candidate 'nope'; known: eager_static"
    """
    unknown = [n for n in request.candidates if n not in known]
    if unknown:
        return f"unknown candidate {unknown[0]!r}; known: {', '.join(known)}"
    model = model_refusal(request.has_generate, request.vocab_size)
    return model or _size_problem(request) or _prompt_problem(request)
