"""The generation candidates: how each builds its stepper from the user's model.

Rules: the baseline (``hf_eager_dynamic``) is ``model.generate`` as users run it and has no
stepper; every other candidate is a static-cache stepper over the model (fp32) or a bf16
copy of it, each phase on its own backend: ``eager``, ``inductor`` (``torch.compile`` of the
decode step, Hugging Face's recipe: one static shape per batch and cache-capacity bucket),
``aoti`` (an AOTInductor package exported with the cache as tensors, one program for both
phases) or ``onnx`` (ONNX Runtime with the cache as inputs and outputs). A candidate is a
recipe: rebuilt from its name and the module, never pickled (an AOTInductor package is found
again on disk). ``costly`` candidates compile. A ``_1thread`` candidate is its plain twin's
stepper (the same build) run with one intra-op thread
(:mod:`aitune_fp.effects.generation.threads`). Candidates are
:class:`~aitune_fp.core.generation.candidate.GenerationCandidate` configs; the steppers
built over one model (and the AOTInductor compiles and packages they use, an
:class:`~aitune_fp.effects.generation.aoti_steps.AotiStore`) are kept in a :class:`Steppers`
cache that is passed (a tune hands its cache to the ``TunedGenerator`` it returns, so its
builds serve it; a load starts a new one), never a module global.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import torch

from aitune_fp.core.generation.candidate import GenerationCandidate, StepKind
from aitune_fp.effects.generation.aoti_steps import AotiStore
from aitune_fp.effects.generation.loop import Stepper
from aitune_fp.effects.generation.onnx_steps import OnnxStepper
from aitune_fp.effects.generation.static_steps import StaticStepper, StepRecipe
from aitune_fp.effects.generation.threads import ThreadedStepper

BASELINE = "hf_eager_dynamic"
Candidate = GenerationCandidate
E, IND, AOTI, ONNX = StepKind.EAGER, StepKind.INDUCTOR, StepKind.AOTI, StepKind.ONNX

CANDIDATES = (
    Candidate("eager_static", E, E, "float32"),
    Candidate("eager_static_bf16", E, E, "bfloat16"),
    Candidate("aoti_static", AOTI, AOTI, "float32"),
    Candidate("aoti_decode", E, AOTI, "float32"),
    Candidate("aoti_static_1thread", AOTI, AOTI, "float32", threads=1),
    Candidate("aoti_decode_1thread", E, AOTI, "float32", threads=1),
    Candidate("eager_static_1thread", E, E, "float32", threads=1),
    Candidate("compiled_static", E, IND, "float32"),
    Candidate("onnx_static", ONNX, ONNX, "float32"),
    Candidate("aoti_static_bf16", AOTI, AOTI, "bfloat16"),
    Candidate("compiled_static_bf16", E, IND, "bfloat16"),
    Candidate("cudagraph_static", E, StepKind.CUDAGRAPH, "float32"),  # CUDA only (devices)
)
BY_NAME = {c.name: c for c in CANDIDATES}


def phase_model(model: torch.nn.Module, candidate: Candidate) -> torch.nn.Module:
    """The module the candidate runs: the model itself (fp32) or a bf16 copy."""
    if candidate.dtype == "float32":
        return model
    return copy.deepcopy(model).to(getattr(torch, candidate.dtype)).eval()


@dataclass(frozen=True, slots=True)
class Steppers:
    """The steppers built over ``model``, by candidate name: the cache a tune passes on."""

    model: torch.nn.Module
    built: dict[str, Stepper] = field(default_factory=dict)
    aoti: AotiStore = field(default_factory=AotiStore)

    def get(self, candidate: Candidate, budget_s: float = 600.0) -> Stepper:
        """The candidate's stepper (a compile is bounded by ``budget_s``), built once."""
        if candidate.name not in self.built:
            self.built[candidate.name] = _new(self, candidate, budget_s)
        return self.built[candidate.name]


def build(steppers: Steppers, candidate: Candidate, budget_s: float = 600.0) -> Stepper:
    """The candidate's stepper from ``steppers`` (built there the first time)."""
    return steppers.get(candidate, budget_s)


def _new(steppers: Steppers, candidate: Candidate, budget_s: float) -> Stepper:
    if candidate.threads:
        plain = BY_NAME[candidate.name.removesuffix(f"_{candidate.threads}thread")]
        return ThreadedStepper(steppers.get(plain, budget_s), candidate.threads)
    module = phase_model(steppers.model, candidate)
    if candidate.prefill_kind is StepKind.ONNX:
        return OnnxStepper(module, budget_s)
    return StaticStepper(
        module,
        StepRecipe(candidate.prefill_kind, budget_s, steppers.aoti),
        StepRecipe(candidate.decode_kind, budget_s, steppers.aoti),
    )
