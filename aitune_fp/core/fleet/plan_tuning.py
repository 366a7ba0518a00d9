"""A fleet plan's precision search and accuracy bounds: what the CLI's ``--search``,
``--precision``, ``--max-drop`` and ``--min-top1`` say, written in the plan.

Rules:
- the keys are ``search`` (``none``, ``default`` or ``wide``), ``precision`` (a list of
  ``fp32``, ``bf16``, ``fp16``, ``int8``), ``max_drop`` and ``min_top1`` (a fraction such
  as ``0.005`` or a percentage string such as ``"0.5%"``; ``min_top1`` at most 1); each may
  be written at the top of the plan, in a ``[[targets]]`` table and in a ``[[models]]``
  table;
- a job's choice of each key is its model's, else its target's, else the plan's
  (:meth:`TuneChoices.over`); a key stated nowhere is left to the CLI's default;
- a job's tune gets exactly the CLI flags of its choices (:meth:`TuneChoices.argv`), so a
  plan means what the same flags mean on ``aitune-fp tune``: :meth:`TuneChoices.search_space`
  and :meth:`TuneChoices.policy` are the values those flags become;
- a bad value is one :class:`~aitune_fp.core.fleet.plan_check.PlanError` naming the key.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from aitune_fp.core.accuracy.policy import AccuracyPolicy
from aitune_fp.core.accuracy.search import LEVELS, PRECISIONS, Search
from aitune_fp.core.strategies.within_accuracy import parse_max_drop

KEYS: Final = ("search", "precision", "max_drop", "min_top1")
Fail = Callable[[tuple[Any, ...], str], Exception]
"""Makes the error for a field path and a problem (the plan parser's ``fail``)."""


@dataclass(frozen=True, slots=True)
class TuneChoices:
    """Precision search and accuracy bounds stated at one level of a plan (``None``: not
    stated there). ``precision`` holds the CLI's names (``fp32``…), the bounds fractions.

    >>> job = TuneChoices(search="wide").over(TuneChoices(search="none", min_top1=0.97))
    >>> job.argv()
    ('--search', 'wide', '--min-top1', '0.97')
    >>> job.search_space(), job.policy().min_top1
    (Search(level='wide', precisions=None), 0.97)
    """

    search: str | None = None
    precision: tuple[str, ...] | None = None
    max_drop: float | None = None
    min_top1: float | None = None

    def over(self, fallback: TuneChoices) -> TuneChoices:
        """Each key of ``self``, else ``fallback``'s."""
        return TuneChoices(
            *(
                mine if mine is not None else theirs
                for mine, theirs in zip(
                    dataclasses.astuple(self), dataclasses.astuple(fallback), strict=True
                )
            )
        )

    def argv(self) -> tuple[str, ...]:
        """The ``aitune-fp tune`` flags that state these choices (nothing for ``None``)."""
        argv: list[str] = []
        if self.search is not None:
            argv += ["--search", self.search]
        if self.precision is not None:
            argv += ["--precision", ",".join(self.precision)]
        if self.max_drop is not None:
            argv += ["--max-drop", repr(self.max_drop)]
        if self.min_top1 is not None:
            argv += ["--min-top1", repr(self.min_top1)]
        return tuple(argv)

    def search_space(self) -> Search:
        """The :class:`~aitune_fp.core.accuracy.search.Search` the tune runs (the CLI's
        default level when none is stated)."""
        precisions = None
        if self.precision is not None:
            precisions = frozenset(PRECISIONS[p] for p in self.precision)
        return Search(self.search or "default", precisions)

    def policy(self) -> AccuracyPolicy | None:
        """The accuracy policy ``--min-top1`` makes (``None``: the default policy)."""
        return None if self.min_top1 is None else AccuracyPolicy(min_top1=self.min_top1)

    def facts(self) -> dict[str, Any]:
        """The stated choices as JSON-able values (for the entry key)."""
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}


def _fraction(value: Any, path: tuple[Any, ...], fail: Fail, *, at_most_one: bool) -> float:
    """A number or a percentage string as a fraction; refused naming ``path``."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise fail(path, f'expected a fraction (0.005) or a percentage ("0.5%"), got {value!r}')
    try:
        fraction = parse_max_drop(str(value))
    except ValueError as error:
        raise fail(path, str(error).replace("max drop", path[-1])) from None
    if at_most_one and fraction > 1:
        raise fail(path, f"expected at most 1 (100%), got {value!r}")
    return fraction


def _precisions(value: Any, path: tuple[Any, ...], fail: Fail) -> tuple[str, ...]:
    names = value if isinstance(value, list) else None
    if not names or not all(isinstance(n, str) for n in names):
        raise fail(path, f'expected a list such as ["fp32", "int8"], got {value!r}')
    for i, name in enumerate(names):
        if name.strip().lower() not in PRECISIONS:
            raise fail(
                (*path, i), f"unknown precision {name!r}; choose from {', '.join(PRECISIONS)}"
            )
    return tuple(dict.fromkeys(n.strip().lower() for n in names))


def parse_choices(table: Mapping[str, Any], path: tuple[Any, ...], fail: Fail) -> TuneChoices:
    """The choices written in ``table`` (at ``path`` of the plan), checked.

    >>> parse_choices({"precision": ["fp32", "INT8"], "max_drop": "0.5%"}, (), ValueError)
    TuneChoices(search=None, precision=('fp32', 'int8'), max_drop=0.005, min_top1=None)
    """
    search = table.get("search")
    if search is not None and search not in LEVELS:
        raise fail((*path, "search"), f"search must be one of {', '.join(LEVELS)}, got {search!r}")
    return TuneChoices(
        search=search,
        precision=None
        if "precision" not in table
        else _precisions(table["precision"], (*path, "precision"), fail),
        max_drop=None
        if "max_drop" not in table
        else _fraction(table["max_drop"], (*path, "max_drop"), fail, at_most_one=False),
        min_top1=None
        if "min_top1" not in table
        else _fraction(table["min_top1"], (*path, "min_top1"), fail, at_most_one=True),
    )


def render_choices(choices: TuneChoices) -> list[str]:
    """The TOML lines of ``choices`` (stated keys only) that :func:`parse_choices` reads back.

    >>> render_choices(TuneChoices(search="wide", precision=("int8",), max_drop=0.005))
    ['search = "wide"', 'precision = ["int8"]', 'max_drop = 0.005']
    """
    lines = []
    if choices.search is not None:
        lines.append(f'search = "{choices.search}"')
    if choices.precision is not None:
        lines.append("precision = [" + ", ".join(f'"{p}"' for p in choices.precision) + "]")
    for key in ("max_drop", "min_top1"):
        value = getattr(choices, key)
        if value is not None:
            lines.append(f"{key} = {value!r}")
    return lines
