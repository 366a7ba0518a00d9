"""Fleet plans: TOML ⇄ value, expansion into jobs and back, and refusals naming the field."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aitune_fp.core.fleet import (
    DEMO_NAMES,
    Plan,
    PlanError,
    collapse,
    expand,
    parse_plan,
    render_plan,
)
from aitune_fp.core.fleet.plan import ModelEntry, TargetEntry, entry_key
from aitune_fp.core.fleet.plan_parse import DTYPES
from tests.core.fleet_plans import plans

PINNED = """
strategies = ["max-throughput", "min-latency"]   # CLI strategy specs
backends = ["onnxruntime", "aot_inductor"]       # optional
max_batch_size = 16                              # optional

[[models]]
name = "mlp"                                     # an embedded demo model ...
[[models]]
name = "tiny"
factory = "models/tiny.py:build"                 # ... or a factory
input_shape = ["4x16"]

[[targets]]
device = "cpu"
"""


def test_the_pinned_plan_parses() -> None:
    """The plan shape pinned in the issue parses into its models, targets and jobs."""
    plan = parse_plan(PINNED)
    tiny = ModelEntry("tiny", "models/tiny.py:build", ((4, 16),))
    assert plan.models == (ModelEntry("mlp"), tiny)
    assert plan.settings.backends == ("onnxruntime", "aot_inductor")
    assert plan.settings.max_batch_size == 16
    assert [j.job_id for j in expand(plan)] == [
        "mlp/cpu/max-throughput",
        "mlp/cpu/min-latency",
        "tiny/cpu/max-throughput",
        "tiny/cpu/min-latency",
    ]


@given(plans())
def test_rendered_plans_parse_back_to_the_same_value(plan: Plan) -> None:
    """parse_plan(render_plan(plan)) is plan: the TOML file and the value are equivalent."""
    assert parse_plan(render_plan(plan)) == plan


@given(plans())
def test_expand_then_collapse_is_the_identity(plan: Plan) -> None:
    """Collapsing a plan's jobs gives the plan back."""
    assert collapse(expand(plan)) == plan


@given(plans())
def test_jobs_are_the_product_with_unique_ids(plan: Plan) -> None:
    """One job per model × target × strategy, each with its own safe folder."""
    jobs = expand(plan)
    assert len(jobs) == len(plan.models) * len(plan.targets) * len(plan.strategies)
    assert len({j.job_id for j in jobs}) == len(jobs)
    for job in jobs:
        assert all(part and "/" not in part and not part.startswith(".") for part in job.parts)


@given(plans(), st.data())
def test_collapse_never_invents_jobs(plan: Plan, data: st.DataObject) -> None:
    """Without one job, collapse refuses, or gives a smaller plan expanding to exactly the rest."""
    jobs = list(expand(plan))
    jobs.pop(data.draw(st.integers(0, len(jobs) - 1)))
    try:
        smaller = collapse(jobs)
    except ValueError as error:
        assert "no jobs" in str(error) or "not the expansion" in str(error)
        return
    assert expand(smaller) == tuple(jobs) and smaller != plan


# Each bad value: where it goes, what it is, the field the error must name.
BAD = [
    ("top", "max_batch_size = 0", "max_batch_size"),
    ("top", "retries = -1", "retries"),
    ("top", 'plot = "yes"', "plot"),
    ("top", 'backends = ["eager", "onnx"]', "backends[1]"),
    ("top", 'colour = "blue"', "colour"),
    ("model", 'input_shape = ["4x0"]', "models[{i}].input_shape[0]"),
    ("model", 'dtype = ["float8"]', "models[{i}].dtype[0]"),
    ("model", 'factory = "no_colon"', "models[{i}].factory"),
    ("model", 'weights = "w.pt"', "models[{i}].weights"),
    ("target", 'device = "tpu"', "targets[{i}].device"),
    ("target", "num_cpus = 0", "targets[{i}].num_cpus"),
    ("target", "max_batch_size = 2.5", "targets[{i}].max_batch_size"),
]


def _plan_with(bad: str, where: str, index: int) -> str:
    """A valid plan of three models and two targets with ``bad`` written at ``where``."""
    top = bad if where == "top" else ""
    models = []
    for i in range(3):
        extra = bad if where == "model" and i == index else ""
        line = "" if "factory" in extra else f'factory = "zoo.py:m{i}"\n'
        models.append(f'[[models]]\nname = "m{i}"\n{line}{extra}\n')
    targets = []
    for i, device in enumerate(["cpu", "cuda"]):
        extra = bad if where == "target" and i == index else ""
        line = "" if "device" in extra else f'device = "{device}"\n'
        targets.append(f'[[targets]]\nname = "t{i}"\n{line}{extra}\n')
    return f'strategies = ["min-latency"]\n{top}\n' + "".join(models) + "".join(targets)


@pytest.mark.parametrize(("where", "bad", "field"), BAD)
@given(index=st.integers(0, 1))
def test_a_bad_value_is_refused_naming_its_field_and_line(
    where: str, bad: str, field: str, index: int
) -> None:
    """The error names the field (models[i].x) and the line the bad value is written on."""
    text = _plan_with(bad, where, index)
    with pytest.raises(PlanError) as caught:
        parse_plan(text, known_backends={"eager", "onnxruntime"})
    error = caught.value
    assert error.field == field.format(i=index)
    assert text.splitlines()[error.line - 1].strip() == bad
    assert str(error).startswith(f"line {error.line}: {error.field}: ")


@pytest.mark.parametrize(
    ("text", "field", "line"),
    [
        ('strategies = ["fastest"]\n[[models]]\nname = "mlp"\n[[targets]]\ndevice = "cpu"\n',
         "strategies[0]", 1),
        ('strategies = ["min-latency", "min_latency"]\n[[models]]\nname = "mlp"\n'
         '[[targets]]\ndevice = "cpu"\n', "strategies[1]", 1),
        ('strategies = ["min-latency"]\n[[models]]\nname = "resnet"\n[[targets]]\n'
         'device = "cpu"\n', "models[0].name", 3),
        ('strategies = ["min-latency"]\n[[models]]\nname = "mlp"\n', "targets", 1),
        ('strategies = ["min-latency"]\n[[models]]\nname = "mlp"\n[[models]]\nname = "mlp"\n'
         '[[targets]]\ndevice = "cpu"\n', "models[1].name", 5),
        ('strategies = ["min-latency"]\n[[models]]\nname = "mlp"\n[[targets]]\ndevice = "cpu"\n'
         '[[targets]]\ndevice = "cpu"\n', "targets[1].name", 6),
        ('strategies = ["min-latency"]\n[[models]]\nfactory = "a.py:f"\n[[targets]]\n'
         'device = "cpu"\n', "models[0]", 2),
        ('strategies = ["min-latency"]\n[[models]]\nname = "mlp"\ninput_shape = ["2x3"]\n'
         '[[targets]]\ndevice = "cpu"\n', "models[0].input_shape", 4),
        ('strategies = ["min-latency"]\n[[models]]\nname = "mlp"\n[[targets]]\n'
         'device = "cpu"\naccelerator_type = "A10G"\n', "targets[0].accelerator_type", 6),
        ('strategies = ["min-latency"]\n[[models]]\nname = "mlp"\n[[targets]]\n'
         'device = "cpu"\nname = ""\n', "targets[0].name", 6),
        ('[[models]]\nname = "mlp"\n[[targets]]\ndevice = "cpu"\n', "strategies", 1),
        ('strategies = ["min-latency"\n', "toml", 1),
        ('strategies = ["min-latency"]\n[[models]]\nname = mlp\n', "toml", 3),
    ],
)  # fmt: skip
def test_plan_level_problems_name_the_field(text: str, field: str, line: int) -> None:
    """Unknown demo names, duplicates, missing tables and syntax errors name field and line."""
    with pytest.raises(PlanError) as caught:
        parse_plan(text)
    assert (caught.value.field, caught.value.line) == (field, line)


def test_plan_lists_match_the_ones_they_mirror() -> None:
    """The core's demo names and dtypes are exactly the demo models and the CLI's dtypes."""
    from aitune_fp.cli.options import DTYPES as CLI_DTYPES
    from aitune_fp.models import DEMO_MODELS

    assert tuple(DEMO_MODELS) == DEMO_NAMES
    assert CLI_DTYPES == DTYPES


def test_entry_key_changes_with_what_decides_the_result() -> None:
    """Effective backends and max batch size are in the key; retries and plot are not."""
    plan = parse_plan(PINNED)
    job = expand(plan)[0]
    same = dataclasses.replace(job, settings=dataclasses.replace(job.settings, retries=0))
    assert entry_key(same) == entry_key(job)
    target = TargetEntry("cpu", max_batch_size=4)
    assert entry_key(dataclasses.replace(job, target=target)) != entry_key(job)
    assert entry_key(dataclasses.replace(job, target=TargetEntry("cpu", backends=("eager",)))) != (
        entry_key(job)
    )


def test_the_documented_zoo_plan_is_valid() -> None:
    """The plan of docs/fleet.md and examples/fleet.toml parse (with every real backend)."""
    import re
    from pathlib import Path

    from aitune_fp.effects.backends.registry import backend_types

    root = Path(__file__).resolve().parents[2]
    block = re.search(r"```toml\n(.*?)```", (root / "docs" / "fleet.md").read_text(), re.S)
    assert block is not None
    zoo = parse_plan(block.group(1), known_backends=set(backend_types()))
    assert len(expand(zoo)) == 18
    example = parse_plan(
        (root / "examples" / "fleet.toml").read_text(), known_backends=set(backend_types())
    )
    assert {m.name for m in example.models} == set(DEMO_NAMES) and len(example.strategies) == 2


def test_a_backend_from_outside_the_package_passes_the_name_check() -> None:
    """``module:Class`` is left to the job that resolves it; an unknown plain name is not."""
    text = 'strategies = ["min-latency"]\nbackends = ["{}"]\n[[models]]\nname = "mlp"\n'
    text += '[[targets]]\ndevice = "cpu"\n'
    plan = parse_plan(text.format("my_pkg.fast:Fast"), known_backends={"eager"})
    assert plan.settings.backends == ("my_pkg.fast:Fast",)
    with pytest.raises(PlanError):
        parse_plan(text.format("fast"), known_backends={"eager"})


PRECISION_PLAN = """
strategies = ["max-throughput"]
search = "wide"
max_drop = "0.5%"

[[models]]
name = "mlp"
min_top1 = 0.97
[[models]]
name = "cnn"
search = "none"

[[targets]]
device = "cpu"
precision = ["fp32", "int8"]
max_drop = 0.02
"""


def test_precision_choices_parse_to_the_search_and_policy_of_each_job() -> None:
    """A job takes each of search, precision, max_drop and min_top1 from its model, else its
    target, else the plan, and they become the Search and policy the CLI flags would."""
    from aitune_fp.core.accuracy import AccuracyPolicy, Search

    mlp, cnn = expand(parse_plan(PRECISION_PLAN))
    assert mlp.tuning.search_space() == Search("wide", frozenset({"float32", "int8"}))
    assert cnn.tuning.search_space() == Search("none", frozenset({"float32", "int8"}))
    assert mlp.tuning.policy() == AccuracyPolicy(min_top1=0.97)
    assert cnn.tuning.policy() is None
    assert (mlp.tuning.max_drop, cnn.tuning.max_drop) == (0.02, 0.02)  # the target's wins
    plan = parse_plan(PRECISION_PLAN)
    assert plan.settings.tuning.max_drop == 0.005


def test_precision_choices_are_in_the_entry_key_only_when_stated() -> None:
    """Stating a choice changes a job's entry key; a plan stating none keeps its old key."""
    from aitune_fp.core.fleet.plan_tuning import TuneChoices

    job = expand(parse_plan(PINNED))[0]
    assert "tuning" not in json.dumps(_facts(job))
    wide = dataclasses.replace(job, model=ModelEntry("mlp", tuning=TuneChoices(search="wide")))
    assert entry_key(wide) != entry_key(job)


def _facts(job: object) -> object:
    from aitune_fp.core.fleet.plan import _job_facts

    return _job_facts(job)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ('search = "widest"', "search"),
        ('precision = ["fp8"]', "precision[0]"),
        ('precision = "int8"', "precision"),
        ("max_drop = -0.1", "max_drop"),
        ('max_drop = "lots"', "max_drop"),
        ("min_top1 = 1.5", "min_top1"),
        ("min_top1 = true", "min_top1"),
    ],
)
@pytest.mark.parametrize("where", ["top", "model", "target"])
def test_a_bad_precision_choice_is_one_line_naming_its_key(
    bad: str, field: str, where: str
) -> None:
    """A bad search, precision or bound is a one-line PlanError naming the key and its line."""
    text = _plan_with(bad, where, 1)
    with pytest.raises(PlanError) as caught:
        parse_plan(text)
    prefix = {"top": "", "model": "models[1].", "target": "targets[1]."}[where]
    assert caught.value.field == prefix + field
    assert text.splitlines()[caught.value.line - 1].strip() == bad
    assert "\n" not in str(caught.value)
