"""A generation candidate as a config: the backend kind of each phase, the dtype it computes
in, the format of its weights and the intra-op threads, as a frozen value (no strings for
kinds).

Rules: a phase's kind is a :class:`StepKind` (a string given at construction is converted,
and an unknown one is refused naming the known kinds); ``dtype`` is ``float32`` or
``bfloat16``; ``weights`` is ``full`` (the weights in ``dtype``) or a weight-only quantised
format, ``int8`` or ``int4`` (activations stay in ``dtype``; only OpenVINO candidates have
them); ``threads`` is 0 (the process's) or the count the candidate runs with. The backend
names carry the dtype, a ``-int8w``/``-int4w`` mark for quantised weights and the threads;
``precision`` is what the accuracy policy judges: ``float32`` (an exactness check) or the
reduced format (``bfloat16``, ``int8``, ``int4``; weights first). A
candidate that compiles (``costly``) has a kind other than eager in a phase; its compiled
builds (``compiled``) are what a failed build marks as failed for the rest of a tune
(:mod:`aitune_fp.core.generation.build_policy`).

>>> c = GenerationCandidate("aoti_decode", "eager", "aoti", "float32")
>>> c.decode_kind is StepKind.AOTI, c.costly, [str(k) for k in c.compiled], c.prefill_backend
(True, True, ['aoti'], 'eager-static-float32')
>>> q = GenerationCandidate("openvino_static_int8", "openvino", "openvino", "float32", "int8")
>>> q.decode_backend, q.precision
('openvino-static-float32-int8w', 'int8')
>>> GenerationCandidate("x", "tpu", "eager", "float32")
Traceback (most recent call last):
...
ValueError: unknown step kind 'tpu'; known: eager, inductor, aoti, onnx, openvino, cudagraph
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final

DTYPES: Final = ("float32", "bfloat16")
WEIGHTS: Final = ("full", "int8", "int4")


class StepKind(StrEnum):
    """The backend a phase's step runs on."""

    EAGER = "eager"
    INDUCTOR = "inductor"
    AOTI = "aoti"
    ONNX = "onnx"
    OPENVINO = "openvino"
    CUDAGRAPH = "cudagraph"


OWN_WEIGHTS: Final = frozenset({StepKind.OPENVINO, StepKind.AOTI})
"""The kinds whose runtime keeps its own copy of the weights."""


def step_kind(value: str) -> StepKind:
    """``value`` as a :class:`StepKind`; an unknown one is a ``ValueError`` naming the known.

    >>> step_kind("onnx") is StepKind.ONNX
    True
    """
    try:
        return StepKind(value)
    except ValueError:
        known = ", ".join(k.value for k in StepKind)
        raise ValueError(f"unknown step kind {value!r}; known: {known}") from None


@dataclass(frozen=True, slots=True)
class GenerationCandidate:
    """A named recipe: each phase's :class:`StepKind`, the dtype of the weights, threads."""

    name: str
    prefill_kind: StepKind
    decode_kind: StepKind
    dtype: str
    weights: str = "full"
    threads: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "prefill_kind", step_kind(self.prefill_kind))
        object.__setattr__(self, "decode_kind", step_kind(self.decode_kind))
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {DTYPES}, got {self.dtype!r}")
        if self.weights not in WEIGHTS:
            raise ValueError(f"weights must be one of {WEIGHTS}, got {self.weights!r}")
        if isinstance(self.threads, bool) or self.threads < 0:
            raise ValueError(f"threads must be an integer >= 0, got {self.threads!r}")

    @property
    def _threads(self) -> str:
        return f"-{self.threads}thread" if self.threads else ""

    @property
    def _format(self) -> str:
        return self.dtype + ("" if self.weights == "full" else f"-{self.weights}w")

    @property
    def prefill_backend(self) -> str:
        """The backend name the record shows for the prefill phase."""
        return f"{self.prefill_kind}-static-{self._format}{self._threads}"

    @property
    def decode_backend(self) -> str:
        """The backend name the record shows for the decode phase."""
        return f"{self.decode_kind}-static-{self._format}{self._threads}"

    @property
    def owns_weights(self) -> bool:
        """True when its stepper holds its own copy of the weights: a runtime that keeps
        its own constants (OpenVINO, an AOTInductor package) or a dtype other than float32.

        >>> GenerationCandidate("e", "eager", "eager", "float32").owns_weights
        False
        """
        return self.dtype != "float32" or bool(self.kinds & OWN_WEIGHTS)

    @property
    def precision(self) -> str:
        """What the accuracy policy judges (see the module rules)."""
        return self.dtype if self.weights == "full" else self.weights

    @property
    def kinds(self) -> frozenset[StepKind]:
        """The kinds of both phases."""
        return frozenset({self.prefill_kind, self.decode_kind})

    @property
    def compiled(self) -> frozenset[StepKind]:
        """The kinds of its phases that compile (all but eager)."""
        return self.kinds - {StepKind.EAGER}

    @property
    def costly(self) -> bool:
        """True when building it compiles (anything but eager)."""
        return bool(self.compiled)
