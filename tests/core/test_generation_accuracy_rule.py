"""A generation candidate's accuracy verdict rests on evidence: a reduced precision passes
only when its agreement's lower bound reaches the rule (positions as rows)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from aitune_fp.core.generation.accuracy_rule import POSITIONS, held_out_rows, teacher_verdict
from aitune_fp.core.generation.choose import candidate_of
from aitune_fp.core.generation.records import GenerationResult


def test_a_bf16_candidate_is_judged_on_its_bound_and_an_fp32_one_on_exactness() -> None:
    """Full agreement on 32 positions passes an fp32 candidate but not a bf16 one (its
    bound is 0.911: it would need 299 positions); on the 320 drawn for bf16 it passes, and
    one disagreement there is refused saying how many positions it would need."""
    assert teacher_verdict(1.0, 32, 0.0, "float32", 0.99, 0.1).accurate
    short = teacher_verdict(1.0, 32, 0.0, "bfloat16", 0.99, 0.1)
    assert not short.accurate and short.needed == 299
    assert teacher_verdict(1.0, POSITIONS, 0.0, "bfloat16", 0.99, 0.1).accurate
    one_off = teacher_verdict(319 / 320, POSITIONS, 0.0, "bfloat16", 0.99, 0.1)
    assert not one_off.accurate and one_off.needed == 473
    refused = GenerationResult(
        "b", "e", "eager-static-bfloat16", 1, 8, 4, 1.0, 1.0, top1=319 / 320, accurate=False,
        positions=320, top1_lower=one_off.lower, positions_needed=one_off.needed,
    )  # fmt: skip
    said = refused_message(refused)
    assert "on 320 positions" in said and "needs 473" in said


def refused_message(r: GenerationResult) -> str:
    """The refusal the fold records for ``r``."""
    return str(candidate_of(r).failure().message)


def test_the_rows_drawn_cover_the_positions_a_bound_needs() -> None:
    """For every teacher length up to 16, the rows drawn for a reduced precision give at
    least the 299 positions a 99 % bound needs with no disagreement."""
    assert all(held_out_rows(n, True) * n >= 299 for n in range(4, 17))


@given(st.integers(1, 2000), st.integers(0, 2000), st.floats(0.5, 0.999))
def test_the_bound_is_never_above_the_estimate_and_more_agreement_never_refuses(
    positions: int, disagree: int, rule: float
) -> None:
    """The verdict's bound never exceeds the observed agreement, and one more agreeing
    position never turns an accepted reduced-precision candidate into a refused one."""
    disagree = min(disagree, positions)
    top1 = (positions - disagree) / positions
    v = teacher_verdict(top1, positions, 0.0, "bfloat16", rule, 1.0)
    assert v.lower is not None and v.lower <= top1 + 1e-12
    more = teacher_verdict((positions - disagree + 1) / (positions + 1), positions + 1, 0.0,
                           "bfloat16", rule, 1.0)  # fmt: skip
    assert more.accurate or not v.accurate
