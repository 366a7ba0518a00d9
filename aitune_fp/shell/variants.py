"""The candidate set and the accuracy policy of a tune, from what the caller asked.

Rules:
- ``search`` (a :class:`~aitune_fp.core.accuracy.Search`, or ``"none"``, ``"default"``,
  ``"wide"``; ``None`` is ``"default"``) generates the candidates when ``backends`` is not
  given (:func:`~aitune_fp.effects.backends.search_space.search_candidates`); a user's own
  list is pinned: it is only narrowed to the search's precisions, never widened;
- :func:`planned` cuts the candidates to what the machine computes natively (read once,
  :mod:`aitune_fp.effects.machine.capabilities`, or the given value): the rest are left
  out, not built (:mod:`aitune_fp.core.accuracy.reach`); a precision the user named
  (``--precisions``, or any config in a pinned list) is kept, with a warning;
- ``accuracy`` (an :class:`~aitune_fp.core.accuracy.AccuracyPolicy`) replaces the
  tolerance's default policy, which keeps today's fp32 rule and admits reduced precision
  only through the eager-relative rule;
- :func:`variant_bases` names each variant's base for the session's pruning
  (:mod:`aitune_fp.core.session.pruning`): a candidate whose config differs from its
  kind's defaults is a variant of the default candidate of that kind when there is one
  (eager's variants have none: the baseline is not a candidate, and an eager variant's
  build is only a cast, so there is nothing to save by skipping it).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

import torch

from aitune_fp.core.accuracy import AccuracyPolicy, Search
from aitune_fp.core.accuracy.reach import REDUCED, Capabilities, LeftOut, reach
from aitune_fp.effects.backends.base import Backend
from aitune_fp.effects.backends.search_space import narrowed, precision_of, search_candidates
from aitune_fp.effects.checks.validate import Tolerance
from aitune_fp.effects.machine.capabilities import capabilities
from aitune_fp.shell.resolve import _unique_names, resolve_backends

log = logging.getLogger("aitune_fp")


def as_search(search: Search | str | None) -> Search:
    """The search a caller named.

    >>> as_search(None), as_search("wide").level
    (Search(level='default', precisions=None), 'wide')
    """
    if search is None:
        return Search()
    return search if isinstance(search, Search) else Search(search)


def resolve_candidates(
    backends: Sequence[Backend | str] | None, search: Search | str | None, device: torch.device
) -> tuple[Backend, ...]:
    """The candidate configs of a tune (see the module rules).

    >>> cpu = torch.device("cpu")
    >>> len(resolve_candidates(None, "wide", cpu)) > len(resolve_candidates(None, None, cpu))
    True
    >>> [b.describe() for b in resolve_candidates(["eager"], "wide", cpu)]  # pinned, not widened
    ['eager']
    """
    space = as_search(search)
    if backends is None:
        return search_candidates(space, device)
    return narrowed(space, resolve_backends(backends, device))


def planned(
    backends: Sequence[Backend | str] | None,
    search: Search | str | None,
    device: torch.device,
    found: Capabilities | None = None,
) -> tuple[tuple[Backend, ...], tuple[LeftOut, ...]]:
    """The candidates ``device`` (or ``found``) runs natively, and those left out.

    >>> avx2 = Capabilities("cpu", frozenset({"int8"}), frozenset({"avx2"}))
    >>> kept, left = planned(None, None, torch.device("cpu"), avx2)
    >>> [x.backend for x in left]  # doctest: +NORMALIZE_WHITESPACE
    ["eager(precision='bfloat16')", "inductor(precision='bfloat16', freezing=True)",
     "openvino(precision='bfloat16')"]
    >>> from aitune_fp.core.accuracy import parse_search
    >>> named = parse_search("default", "bf16")  # asked for: kept, with a warning
    >>> kept, left = planned(None, named, torch.device("cpu"), avx2)
    >>> [b.describe() for b in kept][:1], left
    (["eager(precision='bfloat16')"], ())
    """
    candidates = resolve_candidates(backends, search, device)
    named = as_search(search).precisions or frozenset()
    explicit = frozenset(REDUCED) if backends is not None else named
    names = _unique_names(candidates)
    precisions = [precision_of(c) for c in candidates]
    split = reach(
        tuple(zip(names, precisions, strict=True)), found or capabilities(device), explicit
    )
    for kept in split.warned:
        log.warning("%s: built as asked, though %s", kept.backend, kept.reason)
    by_name = dict(zip(names, candidates, strict=True))
    return tuple(by_name[n] for n in split.kept), split.left_out


def with_policy(tolerance: Tolerance | None, accuracy: AccuracyPolicy | None) -> Tolerance:
    """``tolerance`` (default: :class:`Tolerance`) judging with ``accuracy`` when given.

    >>> with_policy(None, None) == Tolerance()
    True
    >>> judged = with_policy(Tolerance.uniform(rtol=0.0, atol=0.0), AccuracyPolicy(min_top1=0.9))
    >>> judged.policy.min_top1, judged.float32
    (0.9, OutputBound(rtol=0.0, atol=0.0))
    """
    base = tolerance or Tolerance()
    return base if accuracy is None else replace(base, policy=accuracy)


def variant_bases(candidates: Sequence[Backend], names: Sequence[str]) -> dict[str, str]:
    """Each variant's name and its base's name (see the module's rules).

    >>> from aitune_fp.effects.backends.eager import TorchEager
    >>> from aitune_fp.effects.backends.ort import OnnxRuntime
    >>> configs = [OnnxRuntime(), OnnxRuntime(precision="int8-dynamic"),
    ...            TorchEager(precision="bfloat16")]
    >>> names = [c.describe() for c in configs]
    >>> variant_bases(configs, names)
    {"onnxruntime(precision='int8-dynamic')": 'onnxruntime'}
    """
    defaults = {n for c, n in zip(candidates, names, strict=True) if n == c.name}
    return {
        name: config.name
        for config, name in zip(candidates, names, strict=True)
        if name != config.name and config.name in defaults
    }
