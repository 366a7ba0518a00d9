"""A fleet plan from TOML text, checked whole before anything runs.

Rules:
- the text is parsed with ``tomllib``; a syntax error is a :class:`PlanError` at the line
  ``tomllib`` names;
- top-level keys: ``strategies`` (required, CLI strategy specs), ``backends``,
  ``max_batch_size``, ``retries``, ``plot``, ``save``, ``[[models]]`` and ``[[targets]]`` (both
  required, at least one each); a model has ``name`` and optionally ``factory``,
  ``input_shape`` (a list of ``4x16`` shapes) and ``dtype`` (a list); a target has
  ``device`` and optionally ``accelerator_type``, ``name``, ``backends``,
  ``max_batch_size`` and ``num_cpus``; the plan, a model and a target may also state
  ``search``, ``precision``, ``max_drop`` and ``min_top1``
  (:mod:`~aitune_fp.core.fleet.plan_tuning`);
- every value is checked: types, strategy specs (:func:`~aitune_fp.core.parse.parse_strategy`),
  shapes, dtypes, devices, demo names, backend names (when the caller knows them; a
  ``module:Class`` backend from outside the package is checked when a job resolves it), and that
  no two models, targets or strategies share a folder name (nor two specs the same
  strategy, e.g. ``min-latency`` and ``min_latency``); an unknown key is an error;
- the first problem is a :class:`PlanError` naming the line and the field
  (``line 7: models[1].factory: …``); nothing is partially accepted.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Final

from aitune_fp.core.fleet.plan import (
    DEMO_NAMES,
    ModelEntry,
    Plan,
    Settings,
    TargetEntry,
    safe_name,
)
from aitune_fp.core.fleet.plan_check import Checker, PlanError
from aitune_fp.core.fleet.plan_tuning import KEYS, parse_choices
from aitune_fp.core.parse import parse_shape
from aitune_fp.core.strategies.registry import parse_strategy, strategy_config

DTYPES: Final = (
    "float32", "float16", "bfloat16", "float64", "int64", "int32", "int16", "int8", "uint8",
    "bool",
)  # fmt: skip
_TOP: Final = (
    "strategies", "backends", "max_batch_size", "retries", "plot", "save", *KEYS, "models",
    "targets",
)  # fmt: skip
_MODEL: Final = ("name", "factory", "input_shape", "dtype", *KEYS)
_TARGET: Final = (
    "device", "accelerator_type", "name", "backends", "max_batch_size", "num_cpus", *KEYS,
)  # fmt: skip
_DEVICE: Final = re.compile(r"cpu|cuda(:[0-9]+)?")
_FACTORY: Final = re.compile(r".+:[A-Za-z_][A-Za-z0-9_]*")
_SYNTAX_LINE: Final = re.compile(r"at line (\d+)")

__all__ = ["DTYPES", "PlanError", "parse_plan"]


def _strategies(check: Checker, value: Any) -> tuple[str, ...]:
    specs = check.strings(value, ("strategies",))
    if not specs:
        raise check.fail(("strategies",), "expected at least one strategy")
    folders: dict[str, int] = {}
    meanings: dict[str, int] = {}
    for i, spec in enumerate(specs):
        meaning = _meaning(check, spec, i)
        _first_seen(check, folders, safe_name(spec), i, "folder")
        _first_seen(check, meanings, meaning, i, "strategy")
    return specs


def _meaning(check: Checker, spec: str, i: int) -> str:
    """What strategy ``spec`` (``strategies[i]``) means, as canonical JSON."""
    try:
        return json.dumps(strategy_config(parse_strategy(spec)), sort_keys=True)
    except ValueError as error:
        raise check.fail(("strategies", i), str(error)) from None


def _first_seen(check: Checker, seen: dict[str, int], key: str, i: int, what: str) -> None:
    """Note ``key`` of ``strategies[i]``; refuse it when an earlier strategy had it."""
    if key in seen:
        raise check.fail(("strategies", i), f"same {what} as strategies[{seen[key]}]")
    seen[key] = i


def _model(check: Checker, table: Mapping[str, Any], i: int) -> ModelEntry:
    path = ("models", i)
    check.keys(table, _MODEL, path)
    if "name" not in table:
        raise check.fail(path, "a model needs a name")
    name = check.string(table["name"], (*path, "name"))
    factory = None
    if "factory" in table:
        factory = check.string(table["factory"], (*path, "factory"))
        if not _FACTORY.fullmatch(factory):
            raise check.fail(
                (*path, "factory"),
                f"expected path/to/file.py:factory or package.module:factory, got {factory!r}",
            )
    elif name not in DEMO_NAMES:
        raise check.fail(
            (*path, "name"),
            f"{name!r} is not a demo model ({', '.join(DEMO_NAMES)}); give a factory",
        )
    shapes, dtypes = _shapes(check, table, path), _dtypes(check, table, path)
    if factory is None and (shapes or dtypes):
        key = "input_shape" if shapes else "dtype"
        raise check.fail((*path, key), "a demo model brings its own samples")
    return ModelEntry(name, factory, tuple(shapes), dtypes, parse_choices(table, path, check.fail))


def _shapes(check: Checker, table: Mapping[str, Any], path: tuple[Any, ...]) -> list[Any]:
    """A model's ``input_shape`` list, each shape parsed."""
    shapes = []
    for j, text in enumerate(check.strings(table.get("input_shape", []), (*path, "input_shape"))):
        try:
            shapes.append(parse_shape(text))
        except ValueError as error:
            raise check.fail((*path, "input_shape", j), str(error)) from None
    return shapes


def _dtypes(check: Checker, table: Mapping[str, Any], path: tuple[Any, ...]) -> Any:
    """A model's ``dtype`` list, each a known dtype."""
    dtypes = check.strings(table.get("dtype", []), (*path, "dtype"))
    for j, dtype in enumerate(dtypes):
        if dtype not in DTYPES:
            raise check.fail((*path, "dtype", j), f"dtype must be one of {', '.join(DTYPES)}")
    return dtypes


def _device(
    check: Checker, table: Mapping[str, Any], path: tuple[Any, ...]
) -> tuple[str, str | None]:
    """A target's ``device`` and ``accelerator_type`` (only a cuda target has one)."""
    if "device" not in table:
        raise check.fail(path, "a target needs a device (cpu, cuda or cuda:N)")
    device = check.string(table["device"], (*path, "device")).lower()
    if not _DEVICE.fullmatch(device):
        raise check.fail((*path, "device"), f"device must be cpu, cuda or cuda:N, got {device!r}")
    accel = table.get("accelerator_type")
    if accel is not None:
        accel = check.string(accel, (*path, "accelerator_type"))
        if not device.startswith("cuda"):
            raise check.fail((*path, "accelerator_type"), "only a cuda target has one")
    return device, accel


def _target(check: Checker, table: Mapping[str, Any], i: int) -> TargetEntry:
    path = ("targets", i)
    check.keys(table, _TARGET, path)
    device, accel = _device(check, table, path)
    name = check.string(table["name"], (*path, "name")) if "name" in table else None
    cpus = table.get("num_cpus")
    number = isinstance(cpus, int | float) and not isinstance(cpus, bool)
    if cpus is not None and not (number and math.isfinite(cpus) and cpus > 0):
        raise check.fail((*path, "num_cpus"), f"expected a number > 0, got {cpus!r}")
    return TargetEntry(
        device=device,
        accelerator_type=accel,
        name=name,
        backends=check.backends(table["backends"], (*path, "backends"))
        if "backends" in table
        else None,
        max_batch_size=check.positive_int(table["max_batch_size"], (*path, "max_batch_size"))
        if "max_batch_size" in table
        else None,
        num_cpus=None if cpus is None else float(cpus),
        tuning=parse_choices(table, path, check.fail),
    )


def _tables(check: Checker, doc: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    value = doc.get(key)
    if value is None:
        raise check.fail((key,), f"the plan needs at least one [[{key}]] table")
    if not isinstance(value, list) or not value:
        raise check.fail((key,), f"expected one or more [[{key}]] tables")
    for i, table in enumerate(value):
        if not isinstance(table, dict):
            raise check.fail((key, i), f"expected a table, got {table!r}")
    return value


def _unique(check: Checker, key: str, names: Sequence[str], field: str) -> None:
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if safe_name(name) in seen:
            raise check.fail(
                (key, i, field), f"{name!r} has the same folder as {key}[{seen[safe_name(name)]}]"
            )
        seen[safe_name(name)] = i


def _flag(check: Checker, doc: Mapping[str, Any], key: str, default: bool) -> bool:
    """The boolean ``doc[key]`` (``default`` when absent); anything else is refused."""
    flag = doc.get(key, default)
    if not isinstance(flag, bool):
        raise check.fail((key,), f"expected true or false, got {flag!r}")
    return flag


def _settings(check: Checker, doc: Mapping[str, Any]) -> Settings:
    plot, save = _flag(check, doc, "plot", True), _flag(check, doc, "save", False)
    return Settings(
        backends=check.backends(doc["backends"], ("backends",)) if "backends" in doc else None,
        max_batch_size=check.positive_int(doc["max_batch_size"], ("max_batch_size",))
        if "max_batch_size" in doc
        else None,
        retries=check.positive_int(doc.get("retries", 2), ("retries",), least=0),
        plot=plot,
        save=save,
        tuning=parse_choices(doc, (), check.fail),
    )


def _toml(text: str) -> dict[str, Any]:
    """The TOML document ``text``; a :class:`PlanError` on the line of a syntax error."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        match = _SYNTAX_LINE.search(str(error))
        last = max(len(text.splitlines()), 1)  # "at end of document" names no line
        raise PlanError(int(match.group(1)) if match else last, "toml", str(error)) from None


def parse_plan(text: str, *, known_backends: Collection[str] | None = None) -> Plan:
    """The plan ``text`` describes, or a :class:`PlanError` for its first problem.

    >>> plan = parse_plan('strategies = ["min-latency"]\\n[[models]]\\nname = "mlp"\\n'
    ...                   '[[targets]]\\ndevice = "cpu"\\n')
    >>> plan.models[0].name, plan.targets[0].label, plan.settings.retries
    ('mlp', 'cpu', 2)
    >>> parse_plan('strategies = ["fastest"]\\n[[models]]\\nname = "mlp"\\n'
    ...            '[[targets]]\\ndevice = "cpu"\\n')  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    aitune_fp.core.fleet.plan_check.PlanError: line 1: strategies[0]: unknown strategy ...
    """
    doc = _toml(text)
    check = Checker(text, known_backends)
    check.keys(doc, _TOP, ())
    if "strategies" not in doc:
        raise check.fail(("strategies",), 'the plan needs strategies, e.g. ["max-throughput"]')
    strategies = _strategies(check, doc["strategies"])
    settings = _settings(check, doc)
    models = tuple(_model(check, t, i) for i, t in enumerate(_tables(check, doc, "models")))
    targets = tuple(_target(check, t, i) for i, t in enumerate(_tables(check, doc, "targets")))
    _unique(check, "models", [m.name for m in models], "name")
    _unique(check, "targets", [t.label for t in targets], "name")
    return Plan(strategies, models, targets, settings)
