"""Steps of scripts/gpu-check.sh that need Python: providers really used, GPU backends.

    python scripts/gpu_check.py cuda        # exit 3 and "no CUDA device: ..." without one
    python scripts/gpu_check.py providers   # the providers an ONNX Runtime session really uses
    python scripts/gpu_check.py backends    # build, validate and time each GPU backend (MLP)

Every line printed is ``STATUS name: detail`` with STATUS one of PASS, FAIL, SKIP, so the
shell script can count them; a backend whose library is missing is a SKIP with the reason.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import torch

NO_CUDA = 3


def cuda() -> int:
    """PASS with the device name, or exit ``NO_CUDA`` saying why there is none."""
    if not torch.cuda.is_available():
        why = "torch is a CPU-only build" if torch.version.cuda is None else "no device visible"
        print(f"SKIP cuda: no CUDA device ({why}; torch {torch.__version__})")
        return NO_CUDA
    name = torch.cuda.get_device_name(0)
    print(f"PASS cuda: {name} (torch {torch.__version__}, CUDA {torch.version.cuda})")
    return 0


def providers() -> int:
    """Open a session per GPU provider on a one-node model and print what it runs on."""
    try:
        import onnx
        import onnxruntime as ort
        from onnx import TensorProto, helper
    except ImportError as error:
        print(f"SKIP providers: {error}")
        return 0
    from aitune_fp.effects.backends._ort_session import ProviderMismatch, open_checked_session
    from aitune_fp.effects.environment import onnxruntime_facts

    print(f"INFO onnxruntime: {ort.__version__} available {ort.get_available_providers()}")
    print(f"INFO onnxruntime builds: {onnxruntime_facts()}")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "relu.onnx")
        onnx.save(model, path)
        asks = {
            "cuda": ["CUDAExecutionProvider"],
            "tensorrt": ["TensorrtExecutionProvider", "CUDAExecutionProvider"],
        }
        for name, asked in asks.items():
            try:
                session = open_checked_session(ort, path, ort.SessionOptions(), asked)
                print(f"PASS provider {name}: session runs on {session.get_providers()}")
            except ProviderMismatch as error:
                failures += 1
                print(f"FAIL provider {name}: {error}")
    return 1 if failures else 0


def backends(device_name: str = "cuda") -> int:
    """Build, validate and briefly time every GPU backend on the MLP demo model.

    With ``device_name="cpu"`` the same steps run ONNX Runtime's CPU provider: a rehearsal
    of this code path on a machine without a GPU (``backends-cpu``).
    """
    from returns.result import Success

    from aitune_fp.core.measure.stop_rules import fixed_steps, never_stop
    from aitune_fp.effects.backends.base import Backend
    from aitune_fp.effects.backends.ort import OnnxRuntime
    from aitune_fp.effects.backends.torch_trt import TorchTensorRT
    from aitune_fp.effects.backends.trt import TensorRT
    from aitune_fp.effects.inputs import normalise_samples
    from aitune_fp.effects.profiler import ProfileSettings, profile_runner
    from aitune_fp.effects.validate import validate
    from aitune_fp.models import DEMO_MODELS
    from aitune_fp.shell.io import perform

    device = torch.device("cuda", 0) if device_name == "cuda" else torch.device("cpu")
    demo = DEMO_MODELS["mlp"]
    module = demo.build().eval().to(device)
    samples = normalise_samples(demo.samples()).to(device)
    gpu_configs: list[Backend] = [
        OnnxRuntime(provider="cuda"),
        OnnxRuntime(provider="tensorrt", max_batch_size=64),
        TensorRT(max_batch_size=64),
        TensorRT(max_batch_size=64, fp16=True),
        TorchTensorRT(max_batch_size=64),
        TorchTensorRT(max_batch_size=64, fp16=True),
        TorchTensorRT(ir="torch_compile"),
    ]
    configs = gpu_configs if device.type == "cuda" else [OnnxRuntime(provider="cpu")]
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for i, config in enumerate(configs):
            name = config.describe()
            reason = config.unavailable_reason(device)
            if reason is not None:
                print(f"SKIP {name}: {reason}")
                continue
            t0 = time.perf_counter()
            built = perform(config.build(module, samples, device, Path(tmp) / str(i)))
            if not isinstance(built, Success):
                failures += 1
                print(f"FAIL {name}: {built.failure().message}")
                continue
            ok = built.unwrap()
            checked = perform(validate(name, ok, module, samples, device, batch_sizes=(1, 64)))
            if not isinstance(checked, Success):
                failures += 1
                print(f"FAIL {name}: {checked.failure().message}")
                continue
            profile = perform(
                profile_runner(
                    name,
                    ok.runner,
                    samples,
                    device,
                    (1, 64),
                    fixed_steps(warmup=5, steps=20),
                    never_stop(),
                    ProfileSettings(input_mode="same", cuda_events=True),
                )
            )
            timing = "not timed"
            if isinstance(profile, Success):
                lat = profile.unwrap().latencies_ms
                timing = ", ".join(
                    f"bs{bs} median {sorted(v)[len(v) // 2]:.3f} ms" for bs, v in lat.items()
                )
            print(f"PASS {name}: {ok.info}; {timing}; built in {time.perf_counter() - t0:.1f} s")
            ok.close()
    return 1 if failures else 0


def imports() -> int:
    """Check that everything the GPU steps import exists (runs without a GPU)."""
    import importlib
    import inspect

    for step in (providers, backends):
        for line in inspect.getsource(step).splitlines():
            words = line.split()
            if words[:1] == ["from"] and words[1].startswith("aitune_fp") and "import" in words:
                module = importlib.import_module(words[1])
                for name in " ".join(words[3:]).replace(",", " ").split():
                    getattr(module, name)
    print("PASS imports: every module and name the GPU steps use exists")
    return 0


def main(argv: list[str]) -> int:
    """Run the step named by ``argv[0]``."""
    steps = {
        "cuda": cuda,
        "providers": providers,
        "backends": backends,
        "backends-cpu": lambda: backends("cpu"),
        "imports": imports,
    }
    if not argv or argv[0] not in steps:
        print(f"usage: gpu_check.py {{{','.join(steps)}}}", file=sys.stderr)
        return 2
    return steps[argv[0]]()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
