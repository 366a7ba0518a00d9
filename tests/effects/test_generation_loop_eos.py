"""The greedy loop with an EOS id past the model's vocabulary (a config's default EOS over a
smaller vocabulary, as GPT-2's 50256 over 32000 rows)."""

from __future__ import annotations

import torch

from aitune_fp.effects.generation.loop import greedy


class Counting:
    """A stepper whose next token is always 3 (logits over a vocabulary of 8)."""

    def prefill(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None, max_len: int
    ) -> torch.Tensor:
        """Logits favouring token 3."""
        return self.decode(input_ids[:, -1:])

    def decode(self, tokens: torch.Tensor) -> torch.Tensor:
        """Logits favouring token 3."""
        logits = torch.zeros(tokens.shape[0], 8)
        logits[:, 3] = 1.0
        return logits


def test_an_eos_id_past_the_vocabulary_is_never_produced_and_never_fails() -> None:
    """With ``min_new_tokens`` masking EOS, an EOS id beyond the logits' width is skipped
    (it cannot be produced) instead of raising, and generation runs to its length."""
    out = greedy(Counting(), torch.tensor([[1, 2]]), max_new_tokens=4, min_new_tokens=4,
                 eos_token_id=[50256, 5])  # fmt: skip
    assert out.tolist() == [[1, 2, 3, 3, 3, 3]]
