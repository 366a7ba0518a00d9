"""A generation candidate's accuracy verdict rests on evidence: a reduced candidate (bf16,
int8 or int4 weights) passes only when its distributions stay close (mean KL) and it keeps
eager's argmax where eager's margin is clear, on a bound when those positions are enough."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from aitune_fp.core.generation.accuracy_rule import (
    MAX_KL,
    Figures,
    Limits,
    held_out_rows,
    teacher_verdict,
)
from aitune_fp.core.generation.choose import accuracy_text, candidate_of
from aitune_fp.core.generation.records import GenerationResult

RULE = Limits(0.99, 0.1)


def test_float32_is_an_exactness_check_on_every_position() -> None:
    """A float32 candidate passes on its all-position top-1 as measured, whatever its KL."""
    assert teacher_verdict(Figures(1.0, 0.0, 32), "float32", RULE).accurate
    assert not teacher_verdict(Figures(0.98, 0.0, 32), "float32", RULE).accurate


def test_near_tie_flips_do_not_refuse_a_reduced_candidate_but_distance_does() -> None:
    """A reduced candidate whose all-position top-1 is 0.6 (flips where eager is undecided)
    passes on a small KL with no clear position lost, and is refused once its KL passes the
    limit or one clear position flips."""
    close = Figures(0.6, 0.02, 320, kl=MAX_KL / 10, clear=12, clear_top1=1.0)
    assert teacher_verdict(close, "int8", RULE).accurate
    far = Figures(0.6, 0.02, 320, kl=MAX_KL * 2, clear=12, clear_top1=1.0)
    assert not teacher_verdict(far, "int8", RULE).accurate
    flipped = Figures(0.6, 0.02, 320, kl=MAX_KL / 10, clear=12, clear_top1=11 / 12)
    verdict = teacher_verdict(flipped, "int4", RULE)
    assert not verdict.accurate and verdict.needed == 299


def test_with_enough_clear_positions_the_bound_decides() -> None:
    """On 320 clear positions every one agreeing passes (bound ≥ 0.99) while one
    disagreement is refused (its bound falls below 0.99), and the message names both."""
    assert teacher_verdict(Figures(1.0, 0.0, 320, 0.0, 320, 1.0), "bfloat16", RULE).accurate
    one_off = teacher_verdict(Figures(1.0, 0.0, 320, 0.0, 320, 319 / 320), "bfloat16", RULE)
    assert not one_off.accurate and one_off.lower is not None and one_off.lower < 0.99
    refused = GenerationResult(
        "b", "e", "eager-static-bfloat16", 1, 8, 4, 1.0, 1.0, top1=319 / 320, accurate=False,
        positions=320, top1_lower=one_off.lower, kl=0.0, clear_positions=320,
        clear_top1=319 / 320,
    )  # fmt: skip
    said = str(candidate_of(refused).failure().message)
    assert "clear top-1 0.997" in said and "on 320 positions" in said and "KL" in said


def test_a_missing_kl_never_passes_a_reduced_candidate() -> None:
    """Without a measured KL a reduced candidate is refused (no evidence is no pass)."""
    assert not teacher_verdict(Figures(1.0, 0.0, 320, None, 0, None), "int8", RULE).accurate


def test_the_text_says_what_the_policy_read() -> None:
    """The accuracy line of a quantised candidate names its KL and its clear positions."""
    r = GenerationResult("q", "e", "openvino-static-float32-int4w", 1, 8, 4, 1.0, 1.0,
                         top1=0.5, kl=0.3, clear_positions=0)  # fmt: skip
    assert accuracy_text(r).endswith("KL 0.3000, no clear-margin position")


def test_the_rows_drawn_cover_the_positions_a_bound_needs() -> None:
    """For every teacher length up to 64, the rows drawn for a reduced candidate give at
    least the 299 positions a 99 % bound needs with no disagreement."""
    assert all(held_out_rows(n, True) * n >= 299 for n in range(4, 65))


@given(st.integers(1, 2000), st.integers(0, 2000), st.floats(0.5, 0.999))
def test_more_clear_agreement_never_refuses(clear: int, disagree: int, rule: float) -> None:
    """The verdict's bound never exceeds the observed clear agreement, and one more agreeing
    clear position never turns an accepted reduced candidate into a refused one."""
    disagree = min(disagree, clear)
    limits = Limits(rule, 1.0)
    share = (clear - disagree) / clear
    v = teacher_verdict(Figures(share, 0.0, clear, 0.0, clear, share), "bfloat16", limits)
    assert v.lower is None or v.lower <= share + 1e-12
    more_share = (clear - disagree + 1) / (clear + 1)
    more = teacher_verdict(
        Figures(more_share, 0.0, clear + 1, 0.0, clear + 1, more_share), "bfloat16", limits
    )
    assert more.accurate or not v.accurate
