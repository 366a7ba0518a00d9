"""The generation candidates: how each builds its stepper from the user's model.

Rules: the baseline (``hf_eager_dynamic``) is ``model.generate`` as users run it and has no
stepper; every other candidate is a static-cache stepper over the model (fp32) or a bf16 copy
of it, each phase on its own backend: ``eager``, ``inductor`` (``torch.compile`` of the decode
step, Hugging Face's recipe: one static shape per batch and cache-capacity bucket), ``aoti``
(an AOTInductor package exported with the cache as tensors, one program for both phases) or
``onnx`` (ONNX Runtime with the cache as inputs and outputs). A candidate is a recipe:
rebuilt from its name and the module, never pickled (an AOTInductor package is found again on
disk). ``costly`` candidates compile. A ``_1thread`` candidate is its plain twin's stepper
(the same build) run with one intra-op thread (:mod:`aitune_fp.effects.generation.threads`).
"""

from __future__ import annotations

import copy
import weakref
from dataclasses import dataclass
from typing import Any

import torch

from aitune_fp.effects.generation.loop import Stepper
from aitune_fp.effects.generation.onnx_steps import OnnxStepper
from aitune_fp.effects.generation.static_steps import StaticStepper, StepRecipe
from aitune_fp.effects.generation.threads import ThreadedStepper

BASELINE = "hf_eager_dynamic"


@dataclass(frozen=True, slots=True)
class Candidate:
    """A named recipe: the backend kind of each phase and the dtype of the weights."""

    name: str
    prefill_kind: str
    decode_kind: str
    dtype: str
    threads: int = 0

    @property
    def prefill_backend(self) -> str:
        """The backend name the record shows for the prefill phase."""
        return f"{self.prefill_kind}-static-{self.dtype}{self._threads}"

    @property
    def _threads(self) -> str:
        return f"-{self.threads}thread" if self.threads else ""

    @property
    def decode_backend(self) -> str:
        """The backend name the record shows for the decode phase."""
        return f"{self.decode_kind}-static-{self.dtype}{self._threads}"

    @property
    def costly(self) -> bool:
        """True when building it compiles (anything but eager)."""
        return {self.prefill_kind, self.decode_kind} != {"eager"}


CANDIDATES = (
    Candidate("eager_static", "eager", "eager", "float32"),
    Candidate("eager_static_bf16", "eager", "eager", "bfloat16"),
    Candidate("aoti_static", "aoti", "aoti", "float32"),
    Candidate("aoti_decode", "eager", "aoti", "float32"),
    Candidate("aoti_static_1thread", "aoti", "aoti", "float32", threads=1),
    Candidate("aoti_decode_1thread", "eager", "aoti", "float32", threads=1),
    Candidate("eager_static_1thread", "eager", "eager", "float32", threads=1),
    Candidate("compiled_static", "eager", "inductor", "float32"),
    Candidate("onnx_static", "onnx", "onnx", "float32"),
    Candidate("aoti_static_bf16", "aoti", "aoti", "bfloat16"),
    Candidate("compiled_static_bf16", "eager", "inductor", "bfloat16"),
)
BY_NAME = {c.name: c for c in CANDIDATES}


def phase_model(model: torch.nn.Module, candidate: Candidate) -> torch.nn.Module:
    """The module the candidate runs: the model itself (fp32) or a bf16 copy."""
    if candidate.dtype == "float32":
        return model
    return copy.deepcopy(model).to(getattr(torch, candidate.dtype)).eval()


_BUILT: weakref.WeakKeyDictionary[Any, dict[str, Stepper]] = weakref.WeakKeyDictionary()


def build(model: Any, candidate: Candidate, budget_s: float = 600.0) -> Stepper:
    """The candidate's stepper over ``model`` (a compile is bounded by ``budget_s``); a
    stepper built before for the same model object is handed out again, so the tune's
    builds serve the ``TunedGenerator`` it returns."""
    built = _BUILT.setdefault(model, {})
    if candidate.name not in built:
        built[candidate.name] = _new(model, candidate, budget_s)
    return built[candidate.name]


def _new(model: Any, candidate: Candidate, budget_s: float) -> Stepper:
    if candidate.threads:
        plain = BY_NAME[candidate.name.removesuffix(f"_{candidate.threads}thread")]
        return ThreadedStepper(build(model, plain, budget_s), candidate.threads)
    module = phase_model(model, candidate)
    if candidate.prefill_kind == "onnx":
        return OnnxStepper(module, budget_s)
    return StaticStepper(
        module,
        StepRecipe(candidate.prefill_kind, budget_s),
        StepRecipe(candidate.decode_kind, budget_s),
    )
