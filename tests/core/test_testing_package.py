"""aitune_fp.testing: check_all_laws accepts lawful strategies and catches broken ones."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings

from aitune_fp import BackendProfilingResult, Strategy, latency_budget, max_throughput, min_latency
from aitune_fp.core import laws
from aitune_fp.testing import check_all_laws, law_checks

# check_all_laws runs ~30 laws; fewer examples per law keep this file quick.
QUICK = settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
# Finding a broken law is what matters here; shrinking the witness only costs time.
DETECT = settings(
    max_examples=300, deadline=None, database=None, phases=[Phase.generate], print_blob=False
)
LAW_GROUPS = (
    laws.STRATEGY_LAWS,
    laws.MEASURE_LAWS,
    laws.FOLD_LAWS,
    laws.CALL_RULE_LAWS,
    laws.SWEEP_RULE_LAWS,
    laws.SATURATION_LAWS,
    laws.BUDGET_SWEEP_LAWS,
)


@pytest.mark.parametrize("strategy", [max_throughput, min_latency, latency_budget(2.0)])
def test_shipped_strategies_keep_every_law(strategy: Strategy) -> None:
    """check_all_laws passes for every shipped strategy."""
    check_all_laws(strategy, hypothesis_settings=QUICK)


def test_a_non_strict_compare_is_caught() -> None:
    """A compare that says 'at least as good' breaks irreflexivity and is reported by name."""
    broken = dataclasses.replace(max_throughput, compare=lambda a, b: a.metric >= b.metric)
    with pytest.raises(AssertionError, match="compare_irreflexive"):
        DETECT(law_checks(broken)["compare_irreflexive"])()


def test_a_thresholded_compare_breaks_transitive_ties() -> None:
    """'Better by more than 5 %' has intransitive ties, and the generators find a witness."""

    def by_margin(a: BackendProfilingResult, b: BackendProfilingResult) -> bool:
        return a.metric > b.metric * 1.05

    broken = dataclasses.replace(max_throughput, compare=by_margin)
    with pytest.raises(AssertionError, match="incomparability_transitive"):
        DETECT(law_checks(broken)["incomparability_transitive"])()


def test_a_lying_speedup_is_caught() -> None:
    """A speedup that inflates every ratio breaks speedup(a, a) == 1."""
    broken = dataclasses.replace(max_throughput, speedup=lambda a, b: 1.1 * a.metric / b.metric)
    with pytest.raises(AssertionError, match="speedup_identity"):
        DETECT(law_checks(broken)["speedup_identity"])()


def test_a_measure_that_blames_another_backend_is_caught() -> None:
    """A measure failure must name the profile's own backend at stage 'measure'."""

    def measure(profile: object) -> object:
        return min_latency.measure(dataclasses.replace(profile, backend="someone else"))  # type: ignore[type-var]

    broken = dataclasses.replace(min_latency, measure=measure)
    with pytest.raises(AssertionError, match="measure_failure_names_backend"):
        DETECT(law_checks(broken)["measure_failure_names_backend"])()


def test_skip_leaves_out_laws_and_refuses_typos() -> None:
    """skip removes the named laws, and an unknown name is refused rather than ignored."""
    assert "compare_transitive" not in law_checks(max_throughput, skip=["compare_transitive"])
    with pytest.raises(ValueError, match="unknown law names"):
        law_checks(max_throughput, skip=["compare_transitve"])


def test_every_law_has_its_own_test() -> None:
    """Each law in every group is exercised by a test named after it in tests/core."""
    sources = "".join(p.read_text() for p in Path(__file__).parent.glob("test_laws_*.py"))
    missing = [
        law.name for group in LAW_GROUPS for law in group if f"def test_{law.name}(" not in sources
    ]
    assert missing == []


def test_law_names_are_unique() -> None:
    """No two laws share a name, so skip and reports are unambiguous."""
    names = [law.name for group in LAW_GROUPS for law in group]
    assert len(names) == len(set(names))


def test_importing_aitune_fp_does_not_import_hypothesis() -> None:
    """Hypothesis is a test extra: plain ``import aitune_fp`` must not need it."""
    code = "import sys, aitune_fp; print('hypothesis' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
