"""The physical limit of decode on a CPU: memory bandwidth over the bytes of weights a
decode step reads (pure).

Rules: a decode step at batch ``B`` reads every weight the step multiplies once, for all
``B`` rows: the transformer blocks and the output head, but of the input embedding only the
``B`` rows it looks up (when the head shares the embedding's matrix, that matrix is read
once, as the head); so decode cannot exceed ``B × bandwidth ÷ weight bytes`` tokens/s
(:class:`DecodeBound`), and a pick's share of that limit is its decode tokens/s
(``B × 1000 ÷ ITL``) over it. The cache's reads grow with the context and are left out: the
bound is an upper one.

>>> b = DecodeBound(20e9, 2e9, 1)
>>> b.tokens_per_s, round(b.share(150.0), 3)
(10.0, 0.667)
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class DecodeBound:
    """Bandwidth (bytes/s), weight bytes read per decode step, the batch, and the limit."""

    bandwidth: float
    weight_bytes: float
    batch: int

    @property
    def tokens_per_s(self) -> float:
        """The most decode tokens per second the bandwidth allows."""
        return self.batch * self.bandwidth / self.weight_bytes if self.weight_bytes else 0.0

    def decoding(self, itl_ms: float) -> float:
        """The decode tokens/s of a step of ``itl_ms`` at this batch (0 without a step)."""
        return self.batch * 1000.0 / itl_ms if itl_ms > 0 else 0.0

    def share(self, itl_ms: float) -> float:
        """A decode step of ``itl_ms``'s share of the limit (its tokens/s over the bound)."""
        limit = self.tokens_per_s
        return self.decoding(itl_ms) / limit if limit > 0 else 0.0

    def line(self, name: str, itl_ms: float) -> str:
        """``decode limit: …`` as the report and the progress show it.

        >>> print(DecodeBound(20e9, 2e9, 1).line("eager_static", 150.0))
        decode limit 10.0 tokens/s at batch 1 (20.0 GB/s read ÷ 2.00 GB of weights a step); eager_static decodes at 6.7 tokens/s, 67% of it
        """  # noqa: E501
        return (
            f"decode limit {self.tokens_per_s:.1f} tokens/s at batch {self.batch} "
            f"({self.bandwidth / 1e9:.1f} GB/s read ÷ {self.weight_bytes / 1e9:.2f} GB of "
            f"weights a step); {name} decodes at {self.decoding(itl_ms):.1f} tokens/s, "
            f"{self.share(itl_ms):.0%} of it"
        )
