"""The generation candidates: how each builds its stepper from the user's model.

Rules: the baseline (``hf_eager_dynamic``) is ``model.generate`` as users run it and has no
stepper; every other candidate is a static-cache stepper over the model (fp32) or a bf16 copy
of it, with the decode step eager or compiled (``torch.compile``, Hugging Face's recipe: the
decode step has one static shape). A candidate is a recipe: rebuilt from its name and the
module, never pickled.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import torch

from aitune_fp.effects.generation.static_steps import StaticStepper, StepRecipe

BASELINE = "hf_eager_dynamic"


@dataclass(frozen=True, slots=True)
class Candidate:
    """A named recipe: prefill/decode compiled or eager, in fp32 or bf16."""

    name: str
    compiled_decode: bool
    dtype: str

    @property
    def prefill_backend(self) -> str:
        """The backend name the record shows for the prefill phase."""
        return f"eager-static-{self.dtype}"

    @property
    def decode_backend(self) -> str:
        """The backend name the record shows for the decode phase."""
        kind = "inductor" if self.compiled_decode else "eager"
        return f"{kind}-static-{self.dtype}"


CANDIDATES = (
    Candidate("eager_static", False, "float32"),
    Candidate("compiled_static", True, "float32"),
    Candidate("eager_static_bf16", False, "bfloat16"),
    Candidate("compiled_static_bf16", True, "bfloat16"),
)
BY_NAME = {c.name: c for c in CANDIDATES}


def phase_model(model: torch.nn.Module, candidate: Candidate) -> torch.nn.Module:
    """The module the candidate runs: the model itself (fp32) or a bf16 copy."""
    if candidate.dtype == "float32":
        return model
    return copy.deepcopy(model).to(getattr(torch, candidate.dtype)).eval()


def build(model: Any, candidate: Candidate) -> StaticStepper:
    """The candidate's stepper over ``model``."""
    return StaticStepper(
        phase_model(model, candidate),
        StepRecipe(compiled=False),
        StepRecipe(compiled=candidate.compiled_decode),
    )
