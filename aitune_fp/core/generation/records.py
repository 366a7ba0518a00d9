"""One generation candidate's measured phases and accuracy, as a frozen value."""

from __future__ import annotations

from dataclasses import dataclass

from aitune_fp.core.measure.generation_profile import tokens_per_second


@dataclass(frozen=True, slots=True)
class TeacherFigures:
    """A candidate's teacher-forced figures against eager fp32 on the held-out positions:
    top-1 agreement, RMS relative error of the logits, the first position where its greedy
    output would diverge (``None``: never), the mean KL divergence of the next-token
    distributions (nats), and the clear-margin positions with the agreement on them."""

    top1: float
    rms_rel: float
    first_divergence: int | None = None
    kl: float | None = None
    clear_positions: int = 0
    clear_top1: float | None = None


@dataclass(frozen=True, slots=True)
class GenerationResult:
    """A candidate's TTFT and inter-token latency (ms) at one (batch, prompt length), its
    teacher-forced accuracy against eager fp32, and a failure (stage: reason) if it has one.

    ``prefill``/``decode`` name the backend each phase ran on; ``accurate`` is the policy's
    verdict (top-1 and RMS relative error), ``first_divergence`` is reported, never judged;
    ``positions`` is how many held-out positions top-1 was measured on, ``top1_lower`` its
    95 % lower bound where the policy judged the bound (a reduced precision) and
    ``positions_needed`` the positions a bound short of the rule would need
    (:mod:`aitune_fp.core.generation.accuracy_rule`); ``kl`` is the mean KL divergence
    (nats) of its next-token distributions from eager fp32's, ``clear_positions`` how many
    positions had a clear top-2 margin in eager fp32 and ``clear_top1`` its top-1 agreement
    on them (``None``: none were clear, or not measured).
    """

    name: str
    prefill: str
    decode: str
    batch: int
    prompt_len: int
    new_tokens: int
    ttft_ms: float
    itl_ms: float
    top1: float = 1.0
    rms_rel: float = 0.0
    first_divergence: int | None = None
    accurate: bool = True
    failure: str | None = None
    positions: int = 0
    top1_lower: float | None = None
    positions_needed: int | None = None
    kl: float | None = None
    clear_positions: int = 0
    clear_top1: float | None = None

    @property
    def tokens_per_s(self) -> float:
        """Tokens per second as a user receives them (see ``tokens_per_second``)."""
        return tokens_per_second(self.batch, self.new_tokens, self.ttft_ms, self.itl_ms)

    @property
    def precision(self) -> str:
        """The dtype its decode phase computes in (its backend's name carries it).

        >>> GenerationResult("a", "e", "eager-static-bfloat16", 1, 8, 4, 1, 1).precision
        'bfloat16'
        >>> GenerationResult("a", "e", "openvino-static-float32-int4w", 1, 8, 4, 1, 1).precision
        'int4'
        """
        for weights in ("int8", "int4"):
            if f"-{weights}w" in self.decode:
                return weights
        return "bfloat16" if "bfloat16" in self.decode else "float32"

    @property
    def usable(self) -> bool:
        """Measured, no failure, and accurate under the policy."""
        return self.failure is None and self.accurate
