"""Where a whole run's wall time went: a stage breakdown that adds up to the wall.

Rules:
- a :class:`WallAccount` holds the run's ``wall`` seconds (from the process start when the
  tune process was started for the run, the CLI; else from ``run_tuning``'s entry, to the
  moment the final record is made) and its top-level stages, in the order they ran, as
  disjoint ``(name, seconds)`` parts measured in the tune process: ``startup`` (interpreter
  and imports, CLI only), ``setup`` (device, samples, candidates, the workers' server
  asked to start), ``worker_pool_start`` (waiting for that server to finish its imports:
  isolated runs only), ``preload_join`` (in records written before the tune process
  stopped importing the backends' libraries up front: its own background import of them,
  joined before anything was timed), ``max_batch_search``, ``plan`` (the work folder, the
  baseline keys, the first journal record), ``prebuild`` (the builds ahead, when any ran:
  :mod:`aitune_fp.core.session.prebuild`), ``candidates`` (the baseline and every
  candidate, their workers included), ``final_rounds``, ``verification``, ``record``;
- the CLI adds ``plot`` (:func:`with_stage`) when it writes a record's files itself:
  drawing ``plot.png``, after the account closed and before ``run.json`` is written, so
  the written wall ends at the record; a tune's own ``run.json`` is written by the tuner
  alone, its plot drawn after it (no ``plot`` stage);
- ``unaccounted`` is the wall less the stages (never hidden: the console line and the
  report print it, with its share of the wall);
- a decision-cache hit whose re-verification disagrees is followed by a full tune in the
  same account: the hit's stages, from its ``plan`` to the moment the full tune starts, are
  folded into one ``decision_cache_hit`` stage (:func:`folded`), so the full tune's stages
  follow it once each and the record's backends (the full tune's) split only its
  ``candidates``;
- :func:`wall_line` names each stage once, in the order it first ran (a repeated name, as
  in a record written before the fold, is summed into its first place), and splits
  ``candidates`` into what the backends' own recorded stages (``stage_seconds``, without
  the final rounds) sum to and the rest (``between``: the fold's own work, journal writes,
  sending jobs to workers); the backends' part is capped at ``candidates`` (they ran
  inside it: more is another account's or another clock's), so ``between`` is never
  negative and the two parts add up to ``candidates``;
- it is ``run.json``'s ``wall`` object; a record written before it existed reads as
  ``None`` (not measured).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from aitune_fp.core.record.json_codec import from_json
from aitune_fp.core.record.values import encode_float


@dataclass(frozen=True, slots=True)
class WallAccount:
    """The run's wall seconds and its top-level stages (see the rules).

    >>> a = WallAccount(10.0, (("startup", 2.0), ("candidates", 7.5)))
    >>> a.unaccounted, a.seconds("candidates"), a.seconds("verification")
    (0.5, 7.5, 0.0)
    >>> WallAccount(-1.0, ())
    Traceback (most recent call last):
    ...
    ValueError: wall must be >= 0, got -1.0
    """

    wall: float
    stages: tuple[tuple[str, float], ...] = ()
    from_process_start: bool = False

    def __post_init__(self) -> None:
        if self.wall < 0:
            raise ValueError(f"wall must be >= 0, got {self.wall}")
        object.__setattr__(self, "stages", tuple((str(k), float(v)) for k, v in self.stages))

    @property
    def unaccounted(self) -> float:
        """The wall less the stages."""
        return self.wall - sum(seconds for _, seconds in self.stages)

    def seconds(self, name: str) -> float:
        """The seconds of stage ``name`` (0 when it did not run)."""
        return sum((seconds for stage, seconds in self.stages if stage == name), 0.0)


def with_stage(account: WallAccount | None, name: str, seconds: float) -> WallAccount | None:
    """``account`` with one more stage that ran after it closed (the CLI's ``plot``,
    drawn before ``run.json`` is written): the stage appended, the wall longer by it.

    >>> with_stage(WallAccount(3.0, (("setup", 1.0),)), "plot", 0.5)
    WallAccount(wall=3.5, stages=(('setup', 1.0), ('plot', 0.5)), from_process_start=False)
    >>> with_stage(None, "plot", 0.5) is None
    True
    """
    if account is None:
        return None
    return WallAccount(
        account.wall + seconds, (*account.stages, (name, seconds)), account.from_process_start
    )


def folded(
    stages: tuple[tuple[str, float], ...], since: int, name: str
) -> tuple[tuple[str, float], ...]:
    """``stages`` with the ones from index ``since`` on folded into one stage ``name`` (their
    sum), after the ones before it: the stages still add up to the same seconds.

    >>> folded((("setup", 1.0), ("plan", 0.5), ("candidates", 2.0)), 1, "decision_cache_hit")
    (('setup', 1.0), ('decision_cache_hit', 2.5))
    >>> folded((("setup", 1.0),), 1, "decision_cache_hit")
    (('setup', 1.0), ('decision_cache_hit', 0.0))
    """
    return (*stages[:since], (name, sum((s for _, s in stages[since:]), 0.0)))


def encode_wall(account: WallAccount | None) -> dict[str, Any] | None:
    """The record's ``wall`` object (``None``: not measured).

    >>> encode_wall(WallAccount(3.0, (("setup", 1.0),)))["unaccounted_s"]
    2.0
    """
    if account is None:
        return None
    return {
        "wall_s": encode_float(account.wall),
        "from_process_start": account.from_process_start,
        "stages": [{"stage": k, "seconds": encode_float(v)} for k, v in account.stages],
        "unaccounted_s": encode_float(account.unaccounted),
    }


@dataclass(frozen=True, slots=True)
class _Stage:
    """One stage as ``run.json`` writes it."""

    stage: str
    seconds: float


@dataclass(frozen=True, slots=True)
class _Written:
    """The ``wall`` object as ``run.json`` writes it (``unaccounted_s`` is derived: not read)."""

    wall_s: float
    stages: tuple[_Stage, ...] = ()
    from_process_start: bool = False


def decode_wall(data: Any, where: str = "wall") -> WallAccount:
    """A :class:`WallAccount` from :func:`encode_wall`'s output.

    >>> decode_wall({"wall_s": -1.0}, "run record.wall")
    Traceback (most recent call last):
    ...
    ValueError: run record.wall: wall must be >= 0, got -1.0
    """
    doc = from_json(data, _Written, where)
    stages = tuple((s.stage, s.seconds) for s in doc.stages)
    try:
        return WallAccount(doc.wall_s, stages, doc.from_process_start)
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from None


def read_wall(record: dict[str, Any], where: str) -> WallAccount | None:
    """The wall account of a record's JSON (absent, as in older records: ``None``).

    >>> read_wall({}, "run record.wall") is None
    True
    """
    found = record.get("wall")
    return None if found is None else decode_wall(found, where)


def wall_line(account: WallAccount | None, backend_seconds: Iterable[float] = ()) -> str | None:
    """``wall 12.0 s: startup 2.0 s, ..., unaccounted 0.1 s (0.8 %)`` (``None``: not
    measured); ``backend_seconds``: each backend's own recorded stage total, which splits
    ``candidates``.

    >>> wall_line(WallAccount(10.0, (("setup", 1.0), ("candidates", 8.0))), [5.0, 2.5])
    'wall 10.0 s: setup 1.0 s, candidates 8.0 s (backends 7.5 s, between 0.5 s), \
unaccounted 1.0 s (10.0 %)'
    >>> wall_line(None) is None
    True
    """
    if account is None:
        return None
    own = sum(backend_seconds)
    parts = []
    for name, seconds in merged(account.stages):
        backends = min(own, seconds)
        split = f" (backends {backends:.1f} s, between {seconds - backends:.1f} s)"
        parts.append(f"{name} {seconds:.1f} s" + (split if name == "candidates" else ""))
    share = 100 * account.unaccounted / account.wall if account.wall > 0 else 0.0
    parts.append(f"unaccounted {account.unaccounted:.1f} s ({share:.1f} %)")
    return f"wall {account.wall:.1f} s: " + ", ".join(parts)


def merged(stages: Iterable[tuple[str, float]]) -> tuple[tuple[str, float], ...]:
    """Each stage name once, in the order it first ran, with the sum of its seconds.

    >>> merged((("plan", 1.0), ("candidates", 2.0), ("plan", 0.5)))
    (('plan', 1.5), ('candidates', 2.0))
    """
    sums: dict[str, float] = {}
    for name, seconds in stages:
        sums[name] = sums.get(name, 0.0) + seconds
    return tuple(sums.items())
