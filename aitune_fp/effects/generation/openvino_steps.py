"""OpenVINO's LLM path for a generation candidate: the step as a stateful OpenVINO model,
its weights optionally compressed by NNCF, prefill and decode on OpenVINO's CPU plugin.

Rules:
- the step is :class:`~aitune_fp.effects.generation.onnx_steps.CacheStepIO` (logits, then
  every layer's updated keys and values), exported by ``torch.export`` with the same dynamic
  batch, length and capacity as the AOTInductor program and converted by
  ``openvino.convert_model``; OpenVINO's ``MakeStateful`` transformation then turns each
  cache input and its updated output into one variable, so the KV cache lives inside the
  infer request (OpenVINO's stateful LLM recipe) and never crosses into Python;
- weights: ``full`` keeps them as exported (f32); ``int8`` is NNCF ``compress_weights``
  INT8_SYM per output channel (no zero point to subtract); ``int4`` is INT4_ASYM in groups
  of 128 (a smaller power of two where a layer's width is not a multiple, NNCF's ``ADJUST``
  fallback) with NNCF's own backup (int8) for the embedding and the head. Activations stay
  in the inference precision
  (f32, or bf16 for a bf16 candidate, which is offered only where the CPU has it natively);
  OpenVINO's defaults for compressed weights are kept otherwise (its dynamic quantisation of
  activations included: what a user of OpenVINO gets), the policy judging the outcome;
- every model file (the converted step, each compressed variant) is kept on disk under the
  generation package directory, keyed like the AOTInductor packages, so a reload or a second
  tune reads it back instead of exporting again; a variant is written to a folder of its own
  and renamed into place when complete;
- the stepper compiles with the latency hint, one stream and ``threads`` inference threads
  (0: OpenVINO's default, every core); a prefill zeroes every variable at the row count and
  capacity of this generation, then each step feeds ids, mask, positions and
  ``cache_position`` only; logits come back as a float32 torch tensor;
- the bytes a decode step reads are the weights file's (``weight_bytes``: what the decode
  limit divides the bandwidth by);
- CPU only: a model on another device is refused when the stepper is made (a
  ``ValueError`` naming the device), and a missing ``openvino``/``nncf`` is an
  ``ImportError`` naming the extra to install.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Any, Final

import numpy as np
import torch

from aitune_fp.effects.generation.aoti_steps import export_program, package_dir, package_key
from aitune_fp.effects.generation.cache_module import empty_cache
from aitune_fp.effects.generation.host_steps import HostSteps
from aitune_fp.effects.generation.onnx_steps import CacheStepIO

WEIGHTS: Final = ("full", "int8", "int4")
"""The weight formats of an OpenVINO candidate."""
FORMATS: Final = {"int8": "int8_sym", "int4": "int4_asym_g128"}
"""Each compressed format's NNCF recipe, as its model folder names it."""
INT4_GROUP: Final = 128
"""Weights per scale in int4 compression (NNCF's and optimum-intel's default)."""
_STEP_INPUTS: Final = 4
"""Inputs before the cache: ids, attention mask, positions, ``cache_position``."""


def _openvino() -> Any:
    try:
        import openvino
    except ImportError as exc:  # an optional extra
        raise ImportError("openvino is not installed (pip install 'aitune-fp[openvino]')") from exc
    return openvino


def _saved(folder: Path, write: Any) -> Path:
    """``folder/step.xml``, written by ``write(path)`` into a fresh folder renamed into place
    unless it exists already."""
    done = folder / "step.xml"
    if not done.exists():
        folder.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(dir=folder.parent))
        write(work / "step.xml")
        with contextlib.suppress(OSError):  # another process put it there first: as good
            os.replace(work, folder)
    return done


def step_model(model: torch.nn.Module, key: str | None = None) -> Path:
    """The model's step as an OpenVINO IR (f32 weights): from disk, else converted here
    (``key``: the model's package key when the caller holds it, else computed)."""
    ov = _openvino()

    def write(path: Path) -> None:
        program = export_program(CacheStepIO(model), model)
        ov.save_model(ov.convert_model(program), str(path), compress_to_fp16=False)

    return _saved(package_dir() / f"{key or package_key(model)}.ov", write)


def converted(model: torch.nn.Module, key: str | None = None) -> bool:
    """True when the model's step is on disk already (another OpenVINO candidate, or an
    earlier tune, converted it): what a variant still needs is a compression and a compile,
    not the export."""
    return (package_dir() / f"{key or package_key(model)}.ov" / "step.xml").exists()


def compressed_model(model: torch.nn.Module, weights: str, key: str | None = None) -> Path:
    """The step with ``weights`` compressed by NNCF (``full``: the step as converted)."""
    if weights not in WEIGHTS:
        raise ValueError(f"weights must be one of {WEIGHTS}, got {weights!r}")
    key = key or package_key(model)  # hashing every weight once, not per file
    base = step_model(model, key)
    if weights == "full":
        return base
    ov = _openvino()
    try:
        import nncf
    except ImportError as exc:  # an optional extra
        raise ImportError("nncf is not installed (pip install 'aitune-fp[openvino]')") from exc

    def write(path: Path) -> None:
        read = ov.Core().read_model(str(base))
        mode = nncf.CompressWeightsMode
        if weights == "int8":
            done = nncf.compress_weights(read, mode=mode.INT8_SYM)
        else:
            from nncf.quantization.advanced_parameters import (
                AdvancedCompressionParameters,
                GroupSizeFallbackMode,
            )

            adjust = AdvancedCompressionParameters(
                group_size_fallback_mode=GroupSizeFallbackMode.ADJUST
            )
            done = nncf.compress_weights(
                read, mode=mode.INT4_ASYM, group_size=INT4_GROUP, advanced_parameters=adjust
            )
        ov.save_model(done, str(path), compress_to_fp16=False)

    form = FORMATS[weights]  # the folder names the format: a changed recipe is a new file
    return _saved(package_dir() / f"{key}.ov-{form}", write)


def native_refusal(
    name: str, precision: str, native: frozenset[str], threads: int = 0
) -> str | None:
    """Why a ``precision`` OpenVINO candidate with ``threads`` threads is not run on a CPU
    with ``native`` precisions, else None: bf16 where the CPU would only emulate it, and bf16
    on one inference thread, which kills the process in OpenVINO 2026.4's CPU plugin (a
    SIGFPE while compiling: seen on the 0.5B model and on a two-layer Llama).

    >>> native_refusal("openvino_static_bf16", "bfloat16", frozenset({"int8"}))
    'openvino_static_bf16 refused: this CPU has no native bf16 (OpenVINO would emulate it)'
    >>> native_refusal("openvino_static_bf16_1thread", "bfloat16", frozenset({"bfloat16"}), 1)
    'openvino_static_bf16_1thread refused: OpenVINO crashes compiling bf16 for one thread'
    >>> native_refusal("openvino_static", "float32", frozenset())
    """
    if precision == "bfloat16" and "bfloat16" not in native:
        return f"{name} refused: this CPU has no native bf16 (OpenVINO would emulate it)"
    if precision == "bfloat16" and threads == 1:
        return f"{name} refused: OpenVINO crashes compiling bf16 for one thread"
    return None


def compile_config(precision: str, threads: int) -> dict[str, Any]:
    """The plugin's configuration (see the module rules).

    >>> compile_config("bfloat16", 1)["INFERENCE_PRECISION_HINT"], compile_config("float32", 0)
    ('bf16', {'INFERENCE_PRECISION_HINT': 'f32', 'PERFORMANCE_HINT': 'LATENCY', 'NUM_STREAMS': 1})
    """
    config: dict[str, Any] = {
        "INFERENCE_PRECISION_HINT": "bf16" if precision == "bfloat16" else "f32",
        "PERFORMANCE_HINT": "LATENCY",
        "NUM_STREAMS": 1,
    }
    if threads:
        config["INFERENCE_NUM_THREADS"] = threads
    return config


class OpenVinoStepper(HostSteps):
    """Prefill and decode on OpenVINO (CPU), the KV cache held in the request's variables."""

    def __init__(
        self,
        model: torch.nn.Module,
        weights: str,
        precision: str,
        threads: int = 0,
        key: str | None = None,
    ) -> None:
        from aitune_fp.effects.generation.devices import model_device

        device = model_device(model)
        if device.type != "cpu":
            raise ValueError(f"the OpenVINO stepper runs on the CPU only; refused for {device}")
        ov = _openvino()
        from openvino._offline_transformations import apply_make_stateful_transformation

        core = ov.Core()
        path = compressed_model(model, weights, key)
        read = core.read_model(str(path))
        self.weight_bytes = float(path.with_suffix(".bin").stat().st_size)
        params, results = read.get_parameters(), read.get_results()
        pairs = list(zip(params[_STEP_INPUTS:], results[1:], strict=True))
        apply_make_stateful_transformation(read, pairs)
        self.model = model
        self.weights, self.precision, self.threads = weights, precision, threads
        self._compiled = core.compile_model(read, "CPU", compile_config(precision, threads))
        self._request = self._compiled.create_infer_request()
        self._mask: np.ndarray[Any, Any] = np.ones((0, 0), dtype=np.int64)
        self._next_pos: np.ndarray[Any, Any] = np.zeros((0, 1), dtype=np.int64)
        self._length = 0

    def _reset(self, batch: int, capacity: int) -> None:
        ov = _openvino()
        keys, values = empty_cache(self.model, 1, 1)
        shapes = [(batch, k.shape[1], capacity, k.shape[3]) for k in (*keys, *values)]
        self._request.reset_state()
        states = self._request.query_state()
        if len(states) != len(shapes):
            raise RuntimeError(f"{len(states)} OpenVINO variables for {len(shapes)} cache tensors")
        shape = shapes[0]  # every layer's keys and values have one shape in these models
        for state in states:
            state.state = ov.Tensor(np.zeros(shape, dtype=np.float32))

    def _run(self, ids: np.ndarray[Any, Any], positions: np.ndarray[Any, Any], start: int) -> Any:
        cache_position = np.arange(start, start + ids.shape[1], dtype=np.int64)
        inputs = {0: ids, 1: self._mask, 2: positions, 3: cache_position}
        self._request.infer(inputs, share_inputs=True, share_outputs=True)
        logits = self._request.get_output_tensor(0).data
        return torch.from_numpy(logits.copy())  # the next infer writes over its output
