"""The cases of gpu-check's ``backends`` step: the tuner's own candidate configs, on float32
models, judged through the float32 eager reference and the accuracy policy.

    python scripts/gpu_cases.py   # print the plan (no GPU needed)

Rules:
- every case is ``(config, model, switches)``: a backend config exactly as the tuner's
  search builds it (``precision=``, ``fp16=``, ``bf16=`` variants included), a demo model
  kept in float32 (inputs too: a reduced-precision config casts inside itself, as it does
  in a tune), and torch's float32 switches while it is built, validated and timed
  (``strict``: no TF32; ``tf32``: TF32 matmuls and convolutions);
- the core cases need only a CUDA torch: both compilers at float32 (strict and TF32) and
  in both half precisions, on a conv model and a transformer; every other config of the
  ``wide`` search on CUDA is a case too (torch-run ones on the transformer, the ONNX
  Runtime and TensorRT ones on the MLP);
- cheap cases first: the plan is ordered by the backend's build cost (:data:`COST`:
  eager, then Inductor, ONNX Runtime, AOTInductor, TensorRT, Torch-TensorRT; the core
  cases first within one backend), so the step's time proves as many cases as it can
  before the slow compiles; a config whose SDK is missing is a SKIP with its own reason,
  and the step names every SDK that could not run.
"""

from __future__ import annotations

from typing import Any

Case = tuple[Any, str, str]
TORCH_RUN = ("eager", "inductor", "aot_inductor")
COST = ("eager", "inductor", "onnxruntime", "openvino", "aot_inductor", "tensorrt",
        "torch_tensorrt")  # fmt: skip
"""Backends from the cheapest build to the dearest (an unknown one comes last)."""


def cost_rank(case: Case) -> int:
    """The case's place in :data:`COST`.

    >>> from types import SimpleNamespace as S
    >>> cost_rank((S(name="inductor"), "cnn", "strict")) < cost_rank((S(name="tensorrt"), "", ""))
    True
    """
    name = case[0].name
    return COST.index(name) if name in COST else len(COST)


def core_cases() -> list[Case]:
    """Inductor and AOTInductor at fp32 (strict, TF32), bf16 and fp16, on both models."""
    from aitune_fp.effects.backends.aot_inductor import AOTInductor
    from aitune_fp.effects.backends.inductor import InductorJIT

    return [
        (InductorJIT(), "cnn", "strict"),
        (InductorJIT(), "cnn", "tf32"),
        (InductorJIT(precision="bfloat16"), "transformer", "strict"),
        (InductorJIT(precision="float16"), "transformer", "strict"),
        (AOTInductor(), "transformer", "strict"),
        (AOTInductor(), "transformer", "tf32"),
        (AOTInductor(precision="bfloat16"), "cnn", "strict"),
        (AOTInductor(precision="float16"), "cnn", "strict"),
    ]


def plan(device_type: str = "cuda") -> list[Case]:
    """The step's cases, cheap ones first (core first within a backend): the core ones and
    the ``wide`` search's other configs (on CPU: ONNX Runtime's CPU provider on the MLP, a
    rehearsal)."""
    from aitune_fp.core.accuracy import Search
    from aitune_fp.effects.backends.ort import OnnxRuntime
    from aitune_fp.effects.backends.search_space import search_candidates

    if device_type != "cuda":
        return [(OnnxRuntime(provider="cpu"), "mlp", "strict")]
    cases = core_cases()
    seen = {c.describe() for c, _, _ in cases}
    for config in search_candidates(Search("wide"), "cuda"):
        if config.describe() in seen:
            continue
        seen.add(config.describe())
        model = "transformer" if config.name in TORCH_RUN else "mlp"
        cases.append((config, model, "strict"))
    return sorted(cases, key=cost_rank)


def label(case: Case) -> str:
    """``describe() model switches``, the item's name in the log and the summary."""
    config, model, switches = case
    return f"{config.describe()} {model} {switches}"


if __name__ == "__main__":
    core = {label(c) for c in core_cases()}
    for i, case in enumerate(plan()):
        print(f"case {i + 1}: {label(case)}" + (" (core)" if label(case) in core else ""))
