"""The teacher-forced check's first divergence is where the candidate's own free-running
greedy output first leaves the reference continuation (one run serves both)."""

from __future__ import annotations

import torch
from hypothesis import given
from hypothesis import strategies as st

from aitune_fp.effects.generation.loop import greedy
from aitune_fp.effects.generation.teacher import TeacherReference, teacher_forced


class Bigram:
    """A stepper whose next-token logits are a table's row for the last token."""

    def __init__(self, table: torch.Tensor) -> None:
        self.table = table

    def prefill(self, ids: torch.Tensor, _mask: torch.Tensor | None, _cap: int) -> torch.Tensor:
        """The row of each prompt's last token."""
        return self.table[ids[:, -1]]

    def decode(self, tokens: torch.Tensor) -> torch.Tensor:
        """The row of each new token."""
        return self.table[tokens[:, 0]]


@given(st.integers(0, 10_000), st.floats(0.0, 2.0))
def test_first_divergence_equals_the_free_runs(seed: int, noise: float) -> None:
    """For a bigram reference and a perturbed copy of it, the first divergence the teacher
    check reports equals the first position where the copy's free greedy run differs from
    the reference continuation in any row (None when it never does)."""
    gen = torch.Generator().manual_seed(seed)
    table = torch.randn(16, 16, generator=gen)
    moved = table + noise * torch.randn(16, 16, generator=gen)
    ids = torch.randint(0, 16, (3, 4), generator=gen)
    whole = greedy(Bigram(table), ids, max_new_tokens=6)
    continuation = whole[:, 4:]
    logits = table[whole[:, 3:-1]]
    ref = TeacherReference(ids, continuation, logits)
    free = greedy(Bigram(moved), ids, max_new_tokens=6)[:, 4:]
    differ = (free != continuation).any(dim=0).nonzero()
    expected = int(differ[0]) if differ.numel() else None
    assert teacher_forced(Bigram(moved), ref).first_divergence == expected
