"""A plan written back as TOML text that :func:`~aitune_fp.core.fleet.plan_parse.parse_plan`
reads as the same value.

Rules:
- settings first (only those that differ from the defaults), then one ``[[models]]`` and
  one ``[[targets]]`` table per entry, keys in a fixed order, absent options left out;
- strings are TOML basic strings (backslash, quote and control characters escaped), so
  ``parse_plan(render_plan(plan)) == plan`` for every valid plan.
"""

from __future__ import annotations

from collections.abc import Iterable

from aitune_fp.core.fleet.plan import ModelEntry, Plan, Settings, TargetEntry
from aitune_fp.core.fleet.plan_tuning import render_choices


def _string(text: str) -> str:
    """A TOML basic string.

    >>> print(_string('a "b" \\\\ c'))
    "a \\"b\\" \\\\ c"
    """
    out = []
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _list(items: Iterable[str]) -> str:
    return "[" + ", ".join(_string(i) for i in items) + "]"


def _number(value: float) -> str:
    return repr(int(value)) if value == int(value) and abs(value) < 2**53 else repr(value)


def _settings(settings: Settings) -> list[str]:
    lines = []
    if settings.backends is not None:
        lines.append(f"backends = {_list(settings.backends)}")
    if settings.max_batch_size is not None:
        lines.append(f"max_batch_size = {settings.max_batch_size}")
    if settings.retries != Settings().retries:
        lines.append(f"retries = {settings.retries}")
    if not settings.plot:
        lines.append("plot = false")
    if settings.save:
        lines.append("save = true")
    return lines + render_choices(settings.tuning)


def _model(model: ModelEntry) -> list[str]:
    lines = ["", "[[models]]", f"name = {_string(model.name)}"]
    if model.factory is not None:
        lines.append(f"factory = {_string(model.factory)}")
    if model.input_shapes:
        lines.append(f"input_shape = {_list('x'.join(map(str, s)) for s in model.input_shapes)}")
    if model.dtypes:
        lines.append(f"dtype = {_list(model.dtypes)}")
    return lines + render_choices(model.tuning)


def _target(target: TargetEntry) -> list[str]:
    lines = ["", "[[targets]]", f"device = {_string(target.device)}"]
    if target.accelerator_type is not None:
        lines.append(f"accelerator_type = {_string(target.accelerator_type)}")
    if target.name is not None:
        lines.append(f"name = {_string(target.name)}")
    if target.backends is not None:
        lines.append(f"backends = {_list(target.backends)}")
    if target.max_batch_size is not None:
        lines.append(f"max_batch_size = {target.max_batch_size}")
    if target.num_cpus is not None:
        lines.append(f"num_cpus = {_number(target.num_cpus)}")
    return lines + render_choices(target.tuning)


def render_plan(plan: Plan) -> str:
    """``plan`` as TOML text.

    >>> from aitune_fp.core.fleet.plan_parse import parse_plan
    >>> text = render_plan(Plan(("min-latency",), (ModelEntry("mlp"),), (TargetEntry("cpu"),)))
    >>> print(text)
    strategies = ["min-latency"]
    <BLANKLINE>
    [[models]]
    name = "mlp"
    <BLANKLINE>
    [[targets]]
    device = "cpu"
    <BLANKLINE>
    >>> parse_plan(text).models[0].name
    'mlp'
    """
    lines = [f"strategies = {_list(plan.strategies)}", *_settings(plan.settings)]
    for model in plan.models:
        lines.extend(_model(model))
    for target in plan.targets:
        lines.extend(_target(target))
    return "\n".join(lines) + "\n"
