"""The cases of gpu-check's ``backends`` step: the tuner's own candidate configs, on float32
models, judged through the float32 eager reference and the accuracy policy.

    python scripts/gpu_cases.py   # print the plan (no GPU needed)

Rules:
- every case is ``(config, model, switches)``: a backend config exactly as the tuner's
  search builds it (``precision=``, ``fp16=``, ``bf16=`` variants included), a demo model
  kept in float32 (inputs too: a reduced-precision config casts inside itself, as it does
  in a tune), and torch's float32 switches while it is built, validated and timed
  (``strict``: no TF32; ``tf32``: TF32 matmuls and convolutions);
- the core cases come first and need only a CUDA torch: both compilers at float32 (strict
  and TF32) and in both half precisions, on a conv model and a transformer;
- then every other config of the ``wide`` search on CUDA (torch-run ones on the
  transformer, the ONNX Runtime and TensorRT ones on the MLP), while the step's time lasts;
  a config whose SDK is missing is a SKIP with its own reason, and the step names every
  SDK that could not run.
"""

from __future__ import annotations

from typing import Any

Case = tuple[Any, str, str]
TORCH_RUN = ("eager", "inductor", "aot_inductor")


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
    """The step's cases in order: the core ones, then the ``wide`` search's other configs
    (on CPU: ONNX Runtime's CPU provider on the MLP, a rehearsal)."""
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
    return cases


def label(case: Case) -> str:
    """``describe() model switches``, the item's name in the log and the summary."""
    config, model, switches = case
    return f"{config.describe()} {model} {switches}"


if __name__ == "__main__":
    for i, case in enumerate(plan()):
        print(f"case {i + 1}: {label(case)}" + (" (core)" if i < len(core_cases()) else ""))
