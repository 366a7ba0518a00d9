"""The generation pick, made by the one fold: measured results in, a ``GenerationPick`` out.

Rules: each candidate's first result (its primary point) becomes a fold candidate
(:func:`candidate_of`): a result with a failure is a ``Failure`` at the stage its failure
names (``profile`` for a timing failure, ``validate`` for the teacher-forced check, else
``build``); a result the accuracy policy refuses is a ``Failure`` at ``validate`` naming its
top-1 (with its 95 % lower bound and positions where the bound was judged, and the positions
a bound at the rule would need when they were too few) and RMS error; any other is a
``Success(Profile)`` whose ``generation`` holds its point, whose latency is the whole run,
and whose accuracy holds its teacher-forced figures (``top1_agreement``, ``rms_rel_error``,
as every tune names them, and ``first_divergence``). The baseline's result is the fold's
baseline and the others its candidates, in the order given; :func:`aitune_fp.core.fold.tune`
selects. Its winner is the pick (``fell_back`` when the baseline was kept); when the fold
fails (no candidate within a budget) the baseline is kept and the reason says which budget
was unreachable and the best figures measured.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from returns.result import Failure, Result, Success

from aitune_fp.core.fold import tune
from aitune_fp.core.generation.records import GenerationResult
from aitune_fp.core.measure.generation_profile import GenerationPoint, GenerationProfile
from aitune_fp.core.records import BackendFailure, Candidate, Profile, Selection, TuneError
from aitune_fp.core.strategy import Strategy


@dataclass(frozen=True, slots=True)
class GenerationPick:
    """The chosen candidate's result and why it was chosen (or why the baseline was kept)."""

    result: GenerationResult
    reason: str
    fell_back: bool = False


def _stage(failure: str) -> str:
    if "at timing" in failure:
        return "profile"
    return "validate" if "teacher-forced" in failure else "build"


def _profile(r: GenerationResult) -> Profile:
    point = GenerationPoint(r.batch, r.prompt_len, r.new_tokens, r.ttft_ms, r.itl_ms)
    accuracy = {"top1_agreement": r.top1, "rms_rel_error": r.rms_rel}
    if r.first_divergence is not None:
        accuracy["first_divergence"] = float(r.first_divergence)
    generation = GenerationProfile((point,), r.prefill, r.decode)
    return Profile(r.name, {r.batch: [point.total_ms]}, accuracy=accuracy, generation=generation)


def candidate_of(r: GenerationResult) -> Candidate:
    """``r`` as the fold consumes it (see the module rules).

    >>> candidate_of(GenerationResult("a", "e", "e", 1, 8, 4, 10.0, 2.0)).unwrap().latencies_ms
    pmap({1: (16.0,)})
    >>> candidate_of(GenerationResult("a", "e", "e", 1, 8, 4, 1.0, 1.0, accurate=False, top1=0.5))
    <Failure: BackendFailure(backend='a', stage='validate', message='teacher-forced top-1 0.500, RMS relative error 0.0000: refused by the accuracy policy')>
    """  # noqa: E501
    if r.failure is not None:
        return Failure(BackendFailure(r.name, _stage(r.failure), r.failure))
    if not r.accurate:
        return Failure(BackendFailure(r.name, "validate", _refusal(r)))
    return Success(_profile(r))


def accuracy_text(r: GenerationResult) -> str:
    """``r``'s teacher-forced figures as the policy read them: top-1 (with its bound where it
    was judged), RMS relative error, and for a reduced candidate the mean KL and the
    clear-margin agreement.

    >>> accuracy_text(GenerationResult("a", "e", "openvino-static-float32-int8w", 1, 8, 4, 1,
    ...     1, top1=0.9, rms_rel=0.01, kl=0.002, clear_positions=12, clear_top1=1.0))
    'teacher-forced top-1 0.900, RMS relative error 0.0100, KL 0.0020, clear top-1 1.000 on 12 positions'
    """  # noqa: E501
    bound = (
        ""
        if r.top1_lower is None
        else (f" (95 % lower bound {r.top1_lower:.3f} on {r.positions} positions)")
    )
    text = f"teacher-forced top-1 {r.top1:.3f}, RMS relative error {r.rms_rel:.4f}"
    if r.kl is not None and r.precision != "float32":
        text += f", KL {r.kl:.4f}"
        if r.clear_top1 is not None:
            text += f", clear top-1 {r.clear_top1:.3f}{bound} on {r.clear_positions} positions"
        else:
            text += ", no clear-margin position"
    elif r.top1_lower is not None:
        text = text.replace(f"{r.top1:.3f}", f"{r.top1:.3f}{bound}", 1)
    return text


def _refusal(r: GenerationResult) -> str:
    """Why the accuracy policy refused ``r``: its figures and, when its clear positions were
    too few for a bound to reach the rule, how many it would need."""
    need = (
        ""
        if r.positions_needed is None
        else (f"; a bound at the rule needs {r.positions_needed} clear positions")
    )
    return f"{accuracy_text(r)}: refused by the accuracy policy{need}"


def _closest(results: Sequence[GenerationResult]) -> str:
    best_ttft = min(r.ttft_ms for r in results)
    best_itl = min(r.itl_ms for r in results)
    return f"best measured TTFT {best_ttft:.2f} ms, best ITL {best_itl:.2f} ms"


def _reason(strategy: Strategy, chosen: Selection, base: GenerationResult) -> str:
    if chosen.fell_back_to_baseline:
        return f"{strategy.name}: no candidate beat the baseline {base.name}; kept it"
    return (
        f"{strategy.name}: {chosen.backend} {strategy.fmt(chosen.result.metric)}, "
        f"{chosen.result.throughput:.1f} tok/s vs baseline {base.tokens_per_s:.1f} tok/s"
    )


def _fallback(error: TuneError, results: Sequence[GenerationResult], base: GenerationResult) -> str:
    usable = [r for r in results if r.usable] or [base]
    return f"{error.message}: {_closest(usable)}; fell back to the baseline {base.name}"


def _first_of_each(results: Sequence[GenerationResult]) -> list[GenerationResult]:
    """The first result of each candidate name, in the order given."""
    seen: dict[str, GenerationResult] = {}
    for r in results:
        seen.setdefault(r.name, r)
    return list(seen.values())


def choose(
    strategy: Strategy, results: Sequence[GenerationResult], baseline: str
) -> GenerationPick:
    """The fold's pick among ``results`` by ``strategy`` (see the module rules).

    Raises ``ValueError`` when ``baseline`` is not among ``results``.

    >>> from aitune_fp.core.generation.strategies import max_tokens_per_s
    >>> base = GenerationResult("hf", "e", "e", 1, 8, 4, 20.0, 8.0)
    >>> fast = GenerationResult("fast", "e", "i", 1, 8, 4, 10.0, 3.0)
    >>> choose(max_tokens_per_s, [base, fast], "hf").result.name
    'fast'
    """
    firsts = _first_of_each(results)
    base = next((r for r in firsts if r.name == baseline), None)
    if base is None:
        raise ValueError(f"baseline {baseline!r} is not among the results")
    others = [candidate_of(r) for r in firsts if r.name != baseline]
    return pick_of(strategy, tune(strategy, others, candidate_of(base)), results, baseline)


def pick_of(
    strategy: Strategy,
    selected: Result[Selection, TuneError],
    results: Sequence[GenerationResult],
    baseline: str,
) -> GenerationPick:
    """The pick a selection (the fold's, or a session's after its verification) names among
    ``results``, or the baseline kept when it failed (the reason says which budget was
    unreachable and the best figures measured); a verification's line, when the selection
    carries one, ends the reason.

    >>> from returns.result import Failure
    >>> from aitune_fp.core.generation.strategies import max_tokens_per_s
    >>> base = GenerationResult("hf", "e", "e", 1, 8, 4, 20.0, 8.0)
    >>> pick_of(max_tokens_per_s, Failure(TuneError("none")), [base], "hf").fell_back
    True
    """
    base = next(r for r in _first_of_each(results) if r.name == baseline)
    match selected:
        case Success(chosen):
            picked = next(r for r in results if r.name == chosen.backend)
            said = [n for n in chosen.notes[-1:] if n.startswith("verification")]
            why = "; ".join((_reason(strategy, chosen, base), *said))
            return GenerationPick(picked, why, chosen.fell_back_to_baseline)
        case Failure(error):
            return GenerationPick(base, _fallback(error, results, base), True)
    raise TypeError("tune returned no Result")  # pragma: no cover
