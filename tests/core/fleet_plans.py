"""Hypothesis generators of valid fleet plans (unique names, valid specs and values)."""

from __future__ import annotations

from hypothesis import strategies as st

from aitune_fp.core.fleet.plan import (
    DEMO_NAMES,
    ModelEntry,
    Plan,
    Settings,
    TargetEntry,
    safe_name,
)
from aitune_fp.core.fleet.plan_parse import DTYPES
from aitune_fp.core.fleet.plan_tuning import TuneChoices

SPECS = (
    "max-throughput",
    "min-latency",
    "latency-budget=5ms",
    "latency-budget=250us",
    "confident:min-latency",
    "within-memory=512MiB:max-throughput",
)
BACKENDS = ("eager", "onnxruntime", "inductor", "aot_inductor")
# Printable names, quotes and backslashes included (rendered with escapes).
names = st.text(
    st.characters(min_codepoint=0x20, max_codepoint=0x2FF, exclude_characters="\x7f"),
    min_size=1,
    max_size=12,
).filter(lambda s: s.strip() == s and s != "")
shapes = st.tuples(*[st.integers(1, 64)] * 2) | st.tuples(st.integers(1, 8))
choices = st.builds(
    TuneChoices,
    search=st.none() | st.sampled_from(["none", "default", "wide"]),
    precision=st.none()
    | st.lists(st.sampled_from(["fp32", "bf16", "fp16", "int8"]), min_size=1, unique=True).map(
        tuple
    ),
    max_drop=st.none() | st.floats(0, 10, allow_nan=False),
    min_top1=st.none() | st.floats(0, 1, allow_nan=False),
)
backend_lists = st.none() | st.lists(st.sampled_from(BACKENDS), min_size=1, max_size=3).map(tuple)


def _unique_by_folder(items: list[ModelEntry] | list[TargetEntry], key: str) -> bool:
    folders = [safe_name(getattr(i, key)) for i in items]
    return len(set(folders)) == len(folders)


demo_models = st.builds(ModelEntry, st.sampled_from(DEMO_NAMES), tuning=choices)
factory_models = st.builds(
    ModelEntry,
    name=names,
    factory=st.sampled_from(["models/tiny.py:build", "pkg.zoo:make_net", "/abs/m.py:f"]),
    input_shapes=st.lists(shapes, max_size=2).map(tuple),
    dtypes=st.lists(st.sampled_from(DTYPES), max_size=2).map(tuple),
    tuning=choices,
)
targets = st.builds(
    TargetEntry,
    device=st.sampled_from(["cpu", "cuda", "cuda:1"]),
    name=st.none() | names,
    backends=backend_lists,
    max_batch_size=st.none() | st.integers(1, 512),
    num_cpus=st.none() | st.sampled_from([0.5, 1.0, 4.0, 16.0]),
    tuning=choices,
)
cuda_targets = st.builds(
    TargetEntry, device=st.just("cuda"), accelerator_type=st.sampled_from(["A10G", "L4", "H100"])
)
settings = st.builds(
    Settings,
    backends=backend_lists,
    max_batch_size=st.none() | st.integers(1, 512),
    retries=st.integers(0, 5),
    plot=st.booleans(),
    save=st.booleans(),
    tuning=choices,
)


@st.composite
def plans(draw: st.DrawFn) -> Plan:
    """A valid plan: 1-3 strategies, 1-4 models, 1-3 targets, any settings."""
    models = draw(
        st.lists(demo_models | factory_models, min_size=1, max_size=4).filter(
            lambda ms: _unique_by_folder(ms, "name")
        )
    )
    chosen = draw(
        st.lists(targets | cuda_targets, min_size=1, max_size=3).filter(
            lambda ts: _unique_by_folder(ts, "label")
        )
    )
    strategies = draw(st.lists(st.sampled_from(SPECS), min_size=1, max_size=3, unique=True))
    return Plan(tuple(strategies), tuple(models), tuple(chosen), draw(settings))
