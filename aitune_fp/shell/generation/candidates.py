"""The generation candidates: how each builds its stepper from the user's model.

Rules: the baseline (``hf_eager_dynamic``) is ``model.generate`` as users run it and has no
stepper; every other candidate is a static-cache stepper over the model (fp32) or a bf16
copy of it, each phase on its own backend: ``eager``, ``inductor`` (``torch.compile`` of the
decode step, Hugging Face's recipe: one static shape per batch and cache-capacity bucket),
``aoti`` (an AOTInductor package exported with the cache as tensors, one program for both
phases), ``onnx`` (ONNX Runtime with the cache as inputs and outputs) or ``openvino``
(OpenVINO's stateful LLM path, weights full, int8 or int4:
:mod:`aitune_fp.effects.generation.openvino_steps`; its bf16 candidate is offered only where
the CPU has bf16 natively). A candidate is a recipe: rebuilt from its name and the module,
never pickled (an AOTInductor package or an OpenVINO model is found again on disk).
``costly`` candidates compile. Threads are an option of every candidate: each plain
candidate has a twin ``{name}_{n}thread`` for every count of :func:`thread_counts` (1, 2,
4, … below the cores; the plain candidate runs with the process's threads, every core); a
torch twin is its plain twin's stepper (the same build) run with ``n`` intra-op threads
(:mod:`aitune_fp.effects.generation.threads`), an OpenVINO twin the same model compiled with
``n`` inference threads; a twin of any count is accepted by name (:func:`named`).
Candidates are
:class:`~aitune_fp.core.generation.candidate.GenerationCandidate` configs; the steppers
built over one model (and the AOTInductor compiles and packages they use, an
:class:`~aitune_fp.effects.generation.aoti_steps.AotiStore`) are kept in a :class:`Steppers`
cache that is passed (a tune hands its cache to the ``TunedGenerator`` it returns, so its
builds serve it; a load starts a new one), never a module global.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import torch

from aitune_fp.core.generation.candidate import GenerationCandidate, StepKind
from aitune_fp.effects.generation import devices
from aitune_fp.effects.generation.aoti_steps import AotiStore, package_key
from aitune_fp.effects.generation.loop import Stepper
from aitune_fp.effects.generation.onnx_steps import OnnxStepper
from aitune_fp.effects.generation.openvino_steps import OpenVinoStepper, converted, native_refusal
from aitune_fp.effects.generation.static_steps import StaticStepper, StepRecipe
from aitune_fp.effects.generation.threads import ThreadedStepper
from aitune_fp.effects.machine.capabilities import capabilities

BASELINE = "hf_eager_dynamic"
Candidate = GenerationCandidate
E, IND, AOTI, ONNX = StepKind.EAGER, StepKind.INDUCTOR, StepKind.AOTI, StepKind.ONNX
OV = StepKind.OPENVINO

PLAIN = (
    Candidate("eager_static", E, E, "float32"),
    Candidate("openvino_static_int8", OV, OV, "float32", "int8"),
    Candidate("openvino_static_int4", OV, OV, "float32", "int4"),
    Candidate("openvino_static", OV, OV, "float32"),
    Candidate("openvino_static_bf16", OV, OV, "bfloat16"),
    Candidate("eager_static_bf16", E, E, "bfloat16"),
    Candidate("aoti_static", AOTI, AOTI, "float32"),
    Candidate("aoti_decode", E, AOTI, "float32"),
    Candidate("compiled_static", E, IND, "float32"),
    Candidate("onnx_static", ONNX, ONNX, "float32"),
    Candidate("aoti_static_bf16", AOTI, AOTI, "bfloat16"),
    Candidate("compiled_static_bf16", E, IND, "bfloat16"),
    Candidate("cudagraph_static", E, StepKind.CUDAGRAPH, "float32"),  # CUDA only (devices)
)
"""Every candidate at the process's threads, in the order a tune prepares them: the
OpenVINO ones right after the reference (at the sizes people deploy, weight-only int8 is what
wins, and the wall-budget rule must not spend the budget on others first)."""
_PLAIN_BY_NAME = {c.name: c for c in PLAIN}
_TWIN = re.compile(r"^(?P<plain>.+)_(?P<n>[1-9][0-9]*)thread$")


def thread_counts(cores: int) -> tuple[int, ...]:
    """The thread counts measured beside the default: 1, 2, 4, … below ``cores``.

    >>> thread_counts(2), thread_counts(16), thread_counts(1)
    ((1,), (1, 2, 4, 8), ())
    """
    counts, n = [], 1
    while n < cores:
        counts.append(n)
        n *= 2
    return tuple(counts)


def twin(plain: Candidate, threads: int) -> Candidate:
    """``plain`` run with ``threads`` threads, named ``{plain}_{threads}thread``."""
    return replace(plain, name=f"{plain.name}_{threads}thread", threads=threads)


def named(name: str) -> Candidate | None:
    """The candidate called ``name`` (a plain one or a thread twin of any count), else None.

    >>> named("openvino_static_int8_3thread").threads, named("nope_1thread")
    (3, None)
    """
    if name in _PLAIN_BY_NAME:
        return _PLAIN_BY_NAME[name]
    match = _TWIN.match(name)
    if match is None or match["plain"] not in _PLAIN_BY_NAME:
        return None
    return twin(_PLAIN_BY_NAME[match["plain"]], int(match["n"]))


def candidate(name: str) -> Candidate:
    """The candidate called ``name`` (:func:`named`); an unknown one is a ``ValueError``.

    >>> candidate("eager_static_2thread").threads
    2
    """
    found = named(name)
    if found is None:
        raise ValueError(f"unknown generation candidate {name!r}")
    return found


def _defaults(cores: int) -> tuple[Candidate, ...]:
    host = [c for c in PLAIN if StepKind.CUDAGRAPH not in c.kinds]  # a graph launches alone
    twins = [twin(c, n) for c in host for n in thread_counts(cores)]
    return (*PLAIN, *twins)


CANDIDATES = _defaults(os.cpu_count() or 1)
"""The default candidates on this machine: every plain one, then their thread twins."""
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
    memo: dict[str, str] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """The model's package key (a hash of every weight: 2 GB at 0.5B), computed once for
        the steppers of one tune instead of at every build, check and rebuild."""
        if "key" not in self.memo:
            self.memo["key"] = package_key(self.model)
        return self.memo["key"]

    def get(self, candidate: Candidate, budget_s: float = 600.0) -> Stepper:
        """The candidate's stepper (a compile is bounded by ``budget_s``), built once."""
        if candidate.name not in self.built:
            self.built[candidate.name] = _new(self, candidate, budget_s)
        return self.built[candidate.name]

    def keep_only(self, name: str) -> None:
        """Drop every stepper but ``name``'s (a tune's pick): the runner-ups' runtimes, their
        weights and their thread pools leave the process the generator runs in."""
        for other in [n for n in self.built if n != name]:
            del self.built[other]


def reads_back(steppers: Steppers, cand: Candidate) -> bool:
    """True for an OpenVINO candidate whose step is converted on disk already: its build is
    a compression and a compile, not the export."""
    return cand.prefill_kind is OV and converted(steppers.model, steppers.key)


def refusals(chosen: Sequence[Candidate], device: torch.device) -> dict[str, str]:
    """Each of ``chosen`` that may not run here, with why: the device's refusals
    (:func:`~aitune_fp.effects.generation.devices.refusal`), and on a CPU an OpenVINO
    candidate in a precision the CPU only emulates."""
    found = devices.refusals([c.name for c in chosen], device)
    if device.type == "cpu":
        native = capabilities("cpu").native
        for c in chosen:
            why = (
                native_refusal(c.name, c.dtype, native, c.threads) if c.prefill_kind is OV else None
            )
            if why is not None and c.name not in found:
                found[c.name] = why
    return found


def build(steppers: Steppers, candidate: Candidate, budget_s: float = 600.0) -> Stepper:
    """The candidate's stepper from ``steppers`` (built there the first time)."""
    return steppers.get(candidate, budget_s)


def _new(steppers: Steppers, candidate: Candidate, budget_s: float) -> Stepper:
    if candidate.prefill_kind is OV:
        return OpenVinoStepper(
            steppers.model, candidate.weights, candidate.dtype, candidate.threads, steppers.key
        )
    if candidate.threads:
        plain = _PLAIN_BY_NAME[candidate.name.removesuffix(f"_{candidate.threads}thread")]
        return ThreadedStepper(steppers.get(plain, budget_s), candidate.threads)
    module = phase_model(steppers.model, candidate)
    if candidate.prefill_kind is StepKind.ONNX:
        return OnnxStepper(module, budget_s)
    return StaticStepper(
        module,
        StepRecipe(candidate.prefill_kind, budget_s, steppers.aoti),
        StepRecipe(candidate.decode_kind, budget_s, steppers.aoti),
    )
