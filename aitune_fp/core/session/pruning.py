"""Prune the search: a variant of a clearly beaten backend is not built.

Rule: a *variant* is a candidate that differs from a backend's default configuration
only in its variant fields (precision, quantization, runtime options:
``onnxruntime(precision='int8-dynamic')`` is a variant of ``onnxruntime``; a base may
also be the baseline, though a tune declares only candidates as bases). When its base
was measured and the best so far is more than ``VARIANT_GAIN`` times as good as the base
(the strategy's own speedup of the best over it), the variant is not built: it is
recorded as a ``measure`` failure that says why. ``VARIANT_GAIN`` (6×) is above the
largest gain any variant showed over its own base in our measurements (4.6×: Inductor
bf16 with weight freezing over Inductor fp32, the BERT-like classifier at batch 16, AMD
EPYC with AVX512-BF16, a loaded run; eager bf16 by cast 2.99× over eager fp32 on an Intel
Xeon with AMX; ONNX Runtime int8 at most 2.2× over fp32), so a pruned variant could not
have won. (It was 4× until Inductor's bf16 variant showed the larger gain.) A
base that failed, or that is not measured yet, prunes nothing; neither does a run with no
variants declared.

>>> from returns.result import Success
>>> from aitune_fp.core.fold import start, step
>>> from aitune_fp.core.records import Profile
>>> from aitune_fp.core.strategies import min_latency
>>> state = start(min_latency, Success(Profile("eager", {1: [2.0]})))
>>> state = step(min_latency, state, Success(Profile("ort", {1: [14.0]})))
>>> state = step(min_latency, state, Success(Profile("aot", {1: [2.0]})))
>>> print(pruned(min_latency, state, "ort"))
not built: its base ort is 7.00× behind aot (a variant gains at most 6×)
>>> pruned(min_latency, state, "eager") is None
True
"""

from __future__ import annotations

from aitune_fp.core.records import BackendProfilingResult, TuneState
from aitune_fp.core.strategy import Strategy

VARIANT_GAIN = 6.0


def _measured(state: TuneState, name: str) -> BackendProfilingResult | None:
    """The fold's result for ``name`` (a candidate, or the baseline)."""
    if state.baseline is not None and state.baseline.backend == name:
        return state.baseline.result
    return next((s.result for s in state.ranking if s.backend == name), None)


def pruned(strategy: Strategy, state: TuneState, base: str) -> str | None:
    """Why a variant of ``base`` is not built after ``state``, or ``None`` (build it)."""
    found = _measured(state, base)
    best = state.best
    if found is None or best is None or best.backend == base:
        return None
    gain = strategy.speedup(best.result, found)
    if gain <= VARIANT_GAIN:
        return None
    return (
        f"not built: its base {base} is {gain:.2f}× behind {best.backend} "
        f"(a variant gains at most {VARIANT_GAIN:g}×)"
    )
