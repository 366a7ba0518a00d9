"""Generation strategies: pure orders over ``GenerationResult`` and the pick they make.

Rules: a strategy orders usable candidates by a key (lower is better; ties broken by name so
the pick is deterministic); a budget strategy first admits only candidates within its TTFT
and/or inter-token budget, then maximises tokens/s; when none is admitted it falls back to the
baseline and the pick's reason says which budget was unreachable and by how much.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from aitune_fp.core.generation.records import GenerationResult

Key = Callable[[GenerationResult], float]
Admit = Callable[[GenerationResult], bool]


def _always(_: GenerationResult) -> bool:
    return True


@dataclass(frozen=True, slots=True)
class GenerationStrategy:
    """A named order (``key``: lower is better) and an admission rule (``admits``)."""

    name: str
    key: Key
    admits: Admit = _always
    budget: str = ""

    def compare(self, a: GenerationResult, b: GenerationResult) -> bool:
        """Strictly better: ``a`` comes before ``b`` (a strict weak order on the key)."""
        return self.key(a) < self.key(b)


@dataclass(frozen=True, slots=True)
class GenerationPick:
    """The chosen candidate and why it was chosen (or why the baseline was kept)."""

    result: GenerationResult
    reason: str
    fell_back: bool = False


max_tokens_per_s = GenerationStrategy("max_tokens_per_s", lambda r: -r.tokens_per_s)
min_itl = GenerationStrategy("min_itl", lambda r: r.itl_ms)
min_ttft = GenerationStrategy("min_ttft", lambda r: r.ttft_ms)


def generation_budget(
    *, ttft_ms: float | None = None, itl_ms: float | None = None
) -> GenerationStrategy:
    """Max tokens/s among candidates with TTFT <= ``ttft_ms`` and ITL <= ``itl_ms``.

    >>> generation_budget(ttft_ms=50.0).name
    'generation_budget(ttft<=50.0ms)'
    """
    if ttft_ms is None and itl_ms is None:
        raise ValueError("generation_budget needs ttft_ms and/or itl_ms")
    parts = ([f"ttft<={ttft_ms}ms"] if ttft_ms is not None else []) + (
        [f"itl<={itl_ms}ms"] if itl_ms is not None else []
    )

    def admits(r: GenerationResult) -> bool:
        return (ttft_ms is None or r.ttft_ms <= ttft_ms) and (itl_ms is None or r.itl_ms <= itl_ms)

    label = ", ".join(parts)
    return GenerationStrategy(f"generation_budget({label})", max_tokens_per_s.key, admits, label)


def _closest(results: Sequence[GenerationResult]) -> str:
    best_ttft = min(r.ttft_ms for r in results)
    best_itl = min(r.itl_ms for r in results)
    return f"best measured TTFT {best_ttft:.2f} ms, best ITL {best_itl:.2f} ms"


def pick(
    strategy: GenerationStrategy, results: Sequence[GenerationResult], baseline: str
) -> GenerationPick:
    """The strategy's best usable candidate; the baseline with a reason when none qualifies.

    Raises ``ValueError`` when ``baseline`` is not among ``results``.
    """
    base = next((r for r in results if r.name == baseline), None)
    if base is None:
        raise ValueError(f"baseline {baseline!r} is not among the results")
    usable = [r for r in results if r.usable]
    admitted = [r for r in usable if strategy.admits(r)]
    if not admitted:
        why = (
            "no usable candidate"
            if not usable
            else (f"budget {strategy.budget} unreachable: {_closest(usable)}")
        )
        return GenerationPick(base, f"{why}; fell back to the baseline {baseline}", True)
    best = min(admitted, key=lambda r: (strategy.key(r), r.name))
    reason = (
        f"{strategy.name}: {best.name} (prefill {best.prefill}, decode {best.decode}) "
        f"{best.tokens_per_s:.1f} tok/s, TTFT {best.ttft_ms:.2f} ms, ITL {best.itl_ms:.2f} ms "
        f"vs baseline {base.tokens_per_s:.1f} tok/s"
    )
    return GenerationPick(best, reason)
