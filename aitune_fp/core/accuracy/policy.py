"""The accuracy policy: a frozen value that says whether a candidate is correct *enough*.

Rules (the verdict, :func:`judge`, reads only the figures the effect layer recorded, so it
can be re-applied offline to a stored run):
- full precision (``float64``, ``float32``, ``tf32`` or unknown) keeps today's rule: it was
  already checked element by element against eager with the dtype's tolerance
  (``effects/checks/validate.py``); the policy adds nothing unless it holds a user metric;
- reduced precision (``bfloat16``, ``float16``, ``int8``) is admitted only through an
  explicit :class:`ErrorBound` for that precision, or through the eager-relative rule
  (:class:`EagerRelative`): its RMS relative error against an fp64 reference is at most
  ``k ×`` eager fp32's own error against that reference plus the precision's floor. Either
  way, a classifier-like output must keep top-1 agreement with eager of at least
  ``min_top1``;
- outputs without a class axis (embeddings, hidden states, regression: the figures carry
  ``row_cosine``) must also meet the feature floors (:class:`FeatureFloors`): RMS relative
  error against eager at most ``max_rms_rel[precision]`` and every row's cosine with
  eager's at least ``min_row_cosine[precision]``; an explicit :class:`ErrorBound` for the
  precision replaces these floors (the user says what matters), a user metric is checked
  as well (``features=None`` lets it decide alone): a stricter policy never admits more;
- the figures judged are those of the held-out inputs (:mod:`.split`), never the rows a
  calibrating backend was fitted on;
- a user metric (:class:`UserMetric`, built by :func:`metric`) refuses any candidate whose
  score falls more than ``max_drop`` below eager's (absolute, or relative to eager's
  score with ``relative=True``); higher scores are better;
- a figure the rule needs but the record lacks refuses the candidate, naming the figure;
- every rule reads a figure's *claim* (:func:`~aitune_fp.core.accuracy.claims.claimed`):
  its pessimistic one-sided confidence bound when one was recorded (reduced precision,
  judged on enough held-out rows: :mod:`.evidence`), so ``min_top1`` of 99 % means the
  95 % lower bound on top-1 agreement is at least 99 %; the point estimate otherwise.

Longer than 260 lines: the policy value and the rules that read it are one idea, and their
doctests are much of the length.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from pyrsistent import pmap

from aitune_fp.core.accuracy.claims import BOUNDED, claimed

FULL: Final = frozenset({"float64", "float32", "tf32"})
REDUCED: Final = frozenset({"bfloat16", "float16", "int8"})

DEFAULT_FLOORS: Final = pmap({"bfloat16": 3e-2, "float16": 4e-3, "int8": 5e-2})
"""Floors of the eager-relative rule, in RMS relative error: eight units of round-off of
the 8-bit (bf16) and 11-bit (fp16) significands, and 5 % for int8 (about six steps of
1/127 on a tensor's scale)."""

DEFAULT_FEATURE_RMS: Final = pmap({"bfloat16": 1e-2, "float16": 1e-2, "int8": 1e-2})
DEFAULT_ROW_COSINE: Final = pmap({"bfloat16": 0.9998, "float16": 0.9998, "int8": 0.9998})
"""The feature floors for outputs without a class axis, from ``benchmarks/accuracy_floors.py``
(``docs/precision.md``): at 1 % RMS relative error an embedding keeps retrieval recall@1
against fp32 at 100 % even for isotropic noise, and a real int8 run at 0.7 % keeps
recall@10 at 98 %, while static int8 at 2.4 % fell to 86 %; a row cosine of 0.9998 is a
2 % error in any single row (``1 − 0.02²/2``), so one bad row cannot hide in the mean."""


def _unit(value: float, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return float(value)


@dataclass(frozen=True, slots=True)
class ErrorBound:
    """An explicit bound for one precision: ``rms_rel_error ≤ max_rms_rel`` and, when
    given, ``cosine ≥ min_cosine``.

    >>> ErrorBound(0.01).max_rms_rel
    0.01
    """

    max_rms_rel: float
    min_cosine: float | None = None

    def __post_init__(self) -> None:
        _unit(self.max_rms_rel, "max_rms_rel")
        if self.min_cosine is not None:
            _unit(self.min_cosine, "min_cosine")


@dataclass(frozen=True, slots=True)
class EagerRelative:
    """No further from the truth than eager: ``err(candidate, fp64) ≤ k·err(eager, fp64)
    + floor[precision]`` in RMS relative error."""

    k: float = 2.0
    floors: Mapping[str, float] = field(default=DEFAULT_FLOORS)

    def __post_init__(self) -> None:
        _unit(self.k, "k")
        object.__setattr__(self, "floors", pmap({p: _unit(v, p) for p, v in self.floors.items()}))


@dataclass(frozen=True, slots=True)
class FeatureFloors:
    """The floors of outputs without a class axis, per reduced precision: ``rms_rel_error
    ≤ max_rms_rel[p]`` and ``row_cosine ≥ min_row_cosine[p]`` (a precision missing from a
    mapping has no such floor).

    >>> FeatureFloors().max_rms_rel["int8"], FeatureFloors().min_row_cosine["int8"]
    (0.01, 0.9998)
    """

    max_rms_rel: Mapping[str, float] = field(default=DEFAULT_FEATURE_RMS)
    min_row_cosine: Mapping[str, float] = field(default=DEFAULT_ROW_COSINE)

    def __post_init__(self) -> None:
        for name in ("max_rms_rel", "min_row_cosine"):
            table = {p: _unit(v, p) for p, v in getattr(self, name).items()}
            object.__setattr__(self, name, pmap(table))


@dataclass(frozen=True, slots=True)
class UserMetric:
    """``fn(outputs, targets) → float`` (higher is better) on labelled ``data`` (a sequence
    of ``(inputs, targets)``); refused beyond ``max_drop`` below eager's score."""

    fn: Callable[[Any, Any], float] = field(compare=False)
    data: Any = field(compare=False)
    max_drop: float
    relative: bool = False

    def __post_init__(self) -> None:
        _unit(self.max_drop, "max_drop")


def metric(
    fn: Callable[[Any, Any], float], data: Any, *, max_drop: float, relative: bool = False
) -> UserMetric:
    """A user metric for :class:`AccuracyPolicy` (see :class:`UserMetric`)."""
    return UserMetric(fn, data, max_drop, relative)


@dataclass(frozen=True, slots=True)
class AccuracyPolicy:
    """Which candidates are correct enough (see the module rules).

    >>> AccuracyPolicy().eager_relative.k, AccuracyPolicy().min_top1
    (2.0, 0.99)
    """

    bounds: Mapping[str, ErrorBound] = field(default_factory=pmap)
    eager_relative: EagerRelative | None = field(default_factory=EagerRelative)
    min_top1: float = 0.99
    user_metric: UserMetric | None = None
    features: FeatureFloors | None = field(default_factory=FeatureFloors)

    def __post_init__(self) -> None:
        object.__setattr__(self, "bounds", pmap(self.bounds))
        unknown = sorted(set(self.bounds) - REDUCED)
        if unknown:
            raise ValueError(f"bounds are for {sorted(REDUCED)}, got {unknown}")
        if not 0.0 <= _unit(self.min_top1, "min_top1") <= 1.0:
            raise ValueError(f"min_top1 must be within [0, 1], got {self.min_top1!r}")


DEFAULT_POLICY: Final = AccuracyPolicy()


def metric_drop(user: UserMetric, figures: Mapping[str, float]) -> float | None:
    """How far the candidate's score fell below eager's (``None`` without both scores)."""
    eager, got = figures.get("metric_eager"), figures.get("metric_candidate")
    if eager is None or got is None:
        return None
    drop = eager - got
    return drop / abs(eager) if user.relative and eager != 0 else drop


def _bound_word(f: Mapping[str, float], name: str) -> str:
    """`` (95% upper bound)`` when the claim read for ``name`` is a bound, else empty.

    >>> _bound_word({"rms_rel_error_upper": 0.02, "bound_confidence": 0.95}, "rms_rel_error")
    ' (95% upper bound)'
    """
    side = BOUNDED[name]
    if f"{name}_{side}" not in f:
        return ""
    return f" ({f.get('bound_confidence', 0.95):.0%} {side} bound)"


def _eager_relative(rule: EagerRelative, precision: str, f: Mapping[str, float]) -> str | None:
    got, own = claimed(f, "fp64_rms_rel_error"), f.get("eager_fp64_rms_rel_error")
    if got is None or own is None:
        return "no fp64 reference figures for the eager-relative rule"
    limit = rule.k * own + rule.floors.get(precision, 0.0)
    if got <= limit:
        return None
    return (
        f"RMS relative error vs fp64{_bound_word(f, 'fp64_rms_rel_error')} {got:.3g} > "
        f"{rule.k:g} × eager's {own:.3g} "
        f"+ floor {rule.floors.get(precision, 0.0):g}"
    )


def _bound(bound: ErrorBound, f: Mapping[str, float]) -> str | None:
    rms = claimed(f, "rms_rel_error")
    if rms is None:
        return "no rms_rel_error figure"
    if rms > bound.max_rms_rel:
        said = _bound_word(f, "rms_rel_error")
        return f"RMS relative error{said} {rms:.3g} > bound {bound.max_rms_rel:g}"
    cosine = claimed(f, "cosine")
    if bound.min_cosine is not None and (cosine is None or cosine < bound.min_cosine):
        said = _bound_word(f, "cosine")
        return f"cosine similarity{said} {cosine} < bound {bound.min_cosine:g}"
    return None


def _features(policy: AccuracyPolicy, precision: str, f: Mapping[str, float]) -> str | None:
    """Why the feature floors refuse ``f`` (``None``: met, or they do not apply)."""
    floors = policy.features
    cosine = f.get("row_cosine")
    if floors is None or cosine is None or precision in policy.bounds:
        return None
    rms, limit = claimed(f, "rms_rel_error"), floors.max_rms_rel.get(precision)
    if limit is not None and (rms is None or rms > limit):
        said = _bound_word(f, "rms_rel_error")
        return f"RMS relative error{said} {rms if rms is None else f'{rms:.3g}'} > floor {limit:g}"
    low = floors.min_row_cosine.get(precision)
    if low is not None and cosine < low:
        return f"a row's cosine with eager {cosine:.6g} < floor {low:g}"
    return None


def _top1_text(figures: Mapping[str, float], top1: float) -> str:
    """The top-1 claim in words: its bound with the rows and estimate it came from.

    >>> _top1_text({"top1_agreement": 1.0, "top1_agreement_lower": 0.6877,
    ...             "top1_rows": 8.0, "bound_confidence": 0.95}, 0.6877)
    "top-1 agreement's 95% lower bound 68.77% (100.00% observed on 8 rows)"
    """
    if "top1_agreement_lower" not in figures:
        return f"top-1 agreement {top1:.2%}"
    point, rows = figures.get("top1_agreement", top1), figures.get("top1_rows", math.nan)
    level = figures.get("bound_confidence", 0.95)
    return (
        f"top-1 agreement's {level:.0%} lower bound {top1:.2%} "
        f"({point:.2%} observed on {rows:g} rows)"
    )


def judge(
    policy: AccuracyPolicy, precision: str | None, figures: Mapping[str, float]
) -> str | None:
    """``None`` when the policy admits a candidate of ``precision`` with ``figures``, else
    the one-line reason it is refused.

    >>> f = {"rms_rel_error": 0.02, "fp64_rms_rel_error": 0.02,
    ...      "eager_fp64_rms_rel_error": 1e-7, "top1_agreement": 1.0}
    >>> judge(DEFAULT_POLICY, "int8", f) is None, judge(DEFAULT_POLICY, "float32", f) is None
    (True, True)
    >>> judge(AccuracyPolicy(eager_relative=None), "int8", f)
    'int8 needs an explicit bound or the eager-relative rule; there is none'
    """
    user = policy.user_metric
    if user is not None:
        drop = metric_drop(user, figures)
        if drop is None:
            return "the user metric was not computed"
        if drop > user.max_drop:
            return f"user metric dropped {drop:.4g} > max_drop {user.max_drop:g}"
    if precision not in REDUCED:
        return None
    top1 = claimed(figures, "top1_agreement")
    if top1 is not None and top1 < policy.min_top1:
        return f"{_top1_text(figures, top1)} < {policy.min_top1:.2%}"
    unmet = _features(policy, precision, figures)
    if unmet is not None:
        return unmet
    reasons = []
    bound = policy.bounds.get(precision)
    if bound is not None:
        reasons.append(_bound(bound, figures))
    if policy.eager_relative is not None:
        reasons.append(_eager_relative(policy.eager_relative, precision, figures))
    if not reasons:
        return f"{precision} needs an explicit bound or the eager-relative rule; there is none"
    if any(r is None for r in reasons):
        return None
    return "; ".join(r for r in reasons if r is not None)
