"""Laws of the variant pruning (aitune_fp.core.session.pruning) on noise-free simulated
machines: a variant is skipped only when its base is measured and beaten beyond the
bound, and where no variant gains more than the bound over its base, pruning never
changes the pick."""

from __future__ import annotations

from hypothesis import event, given, settings
from hypothesis import strategies as st
from pyrsistent import pmap

from aitune_fp.core.session import Build, Command, Event, SessionPlan, run
from aitune_fp.core.session.pruning import VARIANT_GAIN
from aitune_fp.core.strategies import max_throughput, min_latency
from aitune_fp.testing.simulated import SimulatedMachine

BASES = ("ort", "aot")


@st.composite
def machines(draw: st.DrawFn) -> tuple[dict[str, float], dict[str, str]]:
    """True latencies for eager, two bases and one or two variants of each base, every
    variant at most 3× (below the bound) faster than its base."""
    ms = {"eager": draw(st.floats(0.5, 8.0))}
    variant_of: dict[str, str] = {"eager(bf16)": "eager"}
    for base in BASES:
        ms[base] = draw(st.floats(0.1, 20.0))
        for tag in draw(st.lists(st.sampled_from(("int8", "fp16")), min_size=1, unique=True)):
            variant_of[f"{base}({tag})"] = base
    for variant, base in variant_of.items():
        ms[variant] = ms[base] / draw(st.floats(0.5, 3.0))
    return ms, variant_of


def _run(plan: SessionPlan, ms: dict[str, float]) -> tuple[list[Command], object]:
    machine = SimulatedMachine(ms, sigma=0.0, outlier_p=0.0, drift=0.0)
    answer = machine.answers()
    given: list[Command] = []

    def keeping(command: Command) -> Event | None:
        given.append(command)
        return answer(command)

    _, done = run(plan, keeping)
    return given, done


@settings(max_examples=60)
@given(machines(), st.sampled_from((min_latency, max_throughput)))
def test_pruning_never_changes_the_pick_where_variants_gain_less_than_the_bound(
    case: tuple[dict[str, float], dict[str, str]], strategy: object
) -> None:
    """The same backend is selected with and without the variants declared."""
    ms, variant_of = case
    names = tuple(n for n in ms if n != "eager")
    with_pruning = SessionPlan(strategy, names, variant_of=pmap(variant_of))  # type: ignore[arg-type]
    without = SessionPlan(strategy, names)  # type: ignore[arg-type]
    _, pruned_done = _run(with_pruning, ms)
    _, full_done = _run(without, ms)
    assert pruned_done.selection.unwrap().backend == full_done.selection.unwrap().backend  # type: ignore[attr-defined]


@settings(max_examples=60)
@given(machines())
def test_a_variant_is_skipped_only_when_its_base_is_beaten_beyond_the_bound(
    case: tuple[dict[str, float], dict[str, str]],
) -> None:
    """Every variant that is not built has a base built before it, and something built
    before it that is more than VARIANT_GAIN times as fast as that base."""
    ms, variant_of = case
    names = tuple(n for n in ms if n != "eager")
    commands, done = _run(SessionPlan(min_latency, names, variant_of=pmap(variant_of)), ms)
    built = [c.name for c in commands if isinstance(c, Build)]
    event(f"variants pruned: {len(names) + 1 - len(built) > 0}")
    for failure in done.selection.unwrap().failures:  # type: ignore[attr-defined]
        if "its base" not in failure.message:
            continue
        base = variant_of[failure.backend]
        before = built[: built.index(base) + 1] if base in built else []
        assert before, f"{failure.backend} skipped before its base {base} was measured"
        order = names.index(failure.backend)
        earlier = [b for b in built if b == "eager" or names.index(b) < order]
        assert min(ms[b] for b in earlier) * VARIANT_GAIN < ms[base]
