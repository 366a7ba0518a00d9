"""OpenVINO: the module's ONNX export read by OpenVINO, saved as an IR and compiled for the
CPU with its precision and performance hints.

Rules:
- the build exports the module to ONNX (the same export as ONNX Runtime's, dynamic batch
  and the declared dynamic axes included), reads it with ``openvino.Core.read_model``
  (OpenVINO's ONNX frontend), serialises it as an IR as is (``model.xml`` and its weights
  ``model.xml.bin``, float32: no weight compression) and compiles it for the CPU; the IR is
  the artifact, cached, sealed and loaded back by :func:`_load_ir` without the module;
- dynamic dimensions stay dynamic in the IR: the batch axis and every declared dynamic
  axis are ``-1`` in the ONNX inputs, so one compiled model serves every batch size and
  length of the envelope (validation checks both batch extremes, as for every backend);
- ``precision`` is OpenVINO's ``INFERENCE_PRECISION_HINT`` at compile time (``float32`` as
  ``f32``; ``bfloat16`` as ``bf16``, only where the CPU computes bfloat16 natively:
  elsewhere it is unavailable with the reason); ``performance_hint`` (``LATENCY`` or
  ``THROUGHPUT``), ``num_streams`` (0: OpenVINO's choice) and ``threads``
  (``INFERENCE_NUM_THREADS``, 0: OpenVINO's choice) are compile options too: all four are
  runtime options, outside the artifact's cache key, so every variant shares one IR;
- ``quantization`` changes the IR, so it is part of the key: ``int8`` is NNCF's
  post-training quantization calibrated on the seen rows (the held-out rows judge it),
  ``int8-weights`` its weight-only compression (:mod:`.ov_quant`); both compute in
  ``int8``, with the ``f32`` hint for what stays in float;
- the runner calls one infer request synchronously with the module's tensors as numpy
  views (no copy in) and returns torch tensors in the eager output's structure;
- ``openvino`` is imported only inside this module's functions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Final

import torch
from returns.io import IOResult

from aitune_fp.core.records import BackendFailure
from aitune_fp.effects.backends._availability import first_reason, missing_library
from aitune_fp.effects.backends._build_guard import BuildLog, available_build
from aitune_fp.effects.backends._export import flat_inputs
from aitune_fp.effects.backends._lowp import lowp_unavailable
from aitune_fp.effects.backends._onnx import OnnxGraph, export_onnx, saved_graph
from aitune_fp.effects.backends._runner import prepared
from aitune_fp.effects.backends._runtime_fields import runtime_option
from aitune_fp.effects.backends.base import (
    Backend,
    Built,
    ConfigIdentity,
    Declaration,
    Library,
    LoadRequest,
)
from aitune_fp.effects.backends.ov_quant import QUANTIZATIONS, quantized
from aitune_fp.effects.inputs.samples import InputSpec, Samples

HINTS: Final = {"float32": "f32", "bfloat16": "bf16"}
"""aitune_fp's precision → OpenVINO's ``INFERENCE_PRECISION_HINT`` value."""
PERFORMANCE: Final = ("LATENCY", "THROUGHPUT")
IR_WEIGHTS: Final = ".bin"
"""The IR's weights file is ``<xml name>.bin`` (``model.xml.bin``): a file of the artifact."""


def _load_ir(config: OpenVino, request: LoadRequest) -> Built:
    """A compiled model on a saved IR with ``config``'s hints."""
    graph = saved_graph(request.artifact, request.spec, request.outputs)
    return config.compiled(graph, request.spec)


@dataclass(frozen=True, slots=True)
class OpenVino(ConfigIdentity):
    """Export to ONNX, save as an OpenVINO IR and compile it for the CPU.

    >>> OpenVino().describe(), OpenVino(precision="bfloat16").describe()
    ('openvino', "openvino(precision='bfloat16')")
    >>> OpenVino(performance_hint="FAST")
    Traceback (most recent call last):
    ...
    ValueError: openvino performance_hint must be one of ('LATENCY', 'THROUGHPUT'), got 'FAST'
    """

    declaration: ClassVar[Declaration] = Declaration(
        order=35,
        libraries=("torch.onnx", "onnxscript", "openvino"),
        server_skips=("openvino",),  # its import starts a thread pool: no fork after it
        sdks=("openvino", "nncf"),
        sdk_modules=(
            "aitune_fp.effects.backends.ov_quant",
            "aitune_fp.effects.generation.openvino_steps",
        ),
        versions=(
            Library("openvino", ("openvino",), supported=((2024, 0), None)),
            Library("nncf", ("nncf",)),
        ),
        extra="openvino",
        loader=_load_ir,
        defaults={"cpu": ({},)},
        variants={
            "default": {"cpu": ({"precision": "bfloat16"}, {"quantization": "int8"})},
            "wide": {
                "cpu": (
                    {"quantization": "int8-weights"},
                    {"performance_hint": "THROUGHPUT"},
                    {"threads": 1},
                )
            },
        },
    )

    precision: str = runtime_option("float32")
    performance_hint: str = runtime_option("LATENCY")
    num_streams: int = runtime_option(0)
    threads: int = runtime_option(0)
    quantization: str = "none"
    """``none``, ``int8`` (calibrated) or ``int8-weights`` (:mod:`.ov_quant`)."""
    name: str = field(default="openvino", init=False)

    def __post_init__(self) -> None:
        chosen = (
            ("precision", self.precision, tuple(HINTS)),
            ("performance_hint", self.performance_hint, PERFORMANCE),
            ("quantization", self.quantization, QUANTIZATIONS),
        )
        for label, value, choices in chosen:
            if value not in choices:
                raise ValueError(f"openvino {label} must be one of {choices}, got {value!r}")
        if self.num_streams < 0 or self.threads < 0:
            raise ValueError("num_streams and threads must be >= 0 (0: OpenVINO's choice)")
        if self.quantization != "none" and self.precision != "float32":
            raise ValueError("an int8 OpenVINO model keeps the float32 hint for the rest")

    @property
    def calibrated(self) -> bool:
        """Only ``int8``: its IR depends on the samples' values (calibration)."""
        return self.quantization == "int8"

    @property
    def computes_in(self) -> str:
        """``int8`` when quantized, else the precision hint (``float32``, ``bfloat16``)."""
        return "int8" if self.quantization != "none" else self.precision

    def with_batch_range(self, max_batch_size: int) -> Backend:
        """Itself: the IR's batch axis is dynamic."""
        return self

    def unavailable_reason(self, device: torch.device) -> str | None:
        """Needs a CPU device, ``openvino`` and ``onnxscript`` (``nncf`` to quantize), and
        for ``bfloat16`` a CPU that computes it natively."""
        nncf = ("nncf",) if self.quantization != "none" else ()
        return first_reason(
            lambda: None if device.type == "cpu" else "openvino runs on the CPU device here",
            lambda: missing_library("openvino", "onnxscript", *nncf),
            lambda: lowp_unavailable(self.precision, device),
        )

    def build(
        self, module: torch.nn.Module, samples: Samples, device: torch.device, work_dir: Path
    ) -> IOResult[Built, BackendFailure]:
        """Export to ONNX, save the IR, compile it and run the first sample through it."""

        def build(log: BuildLog) -> Built:
            import openvino as ov

            graph = export_onnx(
                prepared(module, device), samples, device, work_dir / "model.onnx", log
            )
            ir = work_dir / "model.xml"
            with log.timed("convert"):
                model = ov.Core().read_model(str(graph.path))
            if self.quantization != "none":
                model = quantized(model, graph, samples, self.quantization, log)
            with log.timed("serialize"):
                ov.serialize(model, str(ir), str(ir) + IR_WEIGHTS)
            log.write(f"OpenVINO {ov.get_version()}: IR {ir.name} (+{ir.name}{IR_WEIGHTS})")
            ir_graph = dataclasses.replace(graph, path=ir)
            with log.timed("compile"):
                built = self.compiled(ir_graph, samples.spec)
            samples.items[0].to(device).call(built.runner)
            return dataclasses.replace(built, info={**built.info, "export": graph.export})

        return available_build(self, device, work_dir, build)

    def compile_config(self) -> dict[str, str]:
        """The compile options: the precision and performance hints, streams and threads.

        >>> OpenVino(precision="bfloat16", threads=2).compile_config()["INFERENCE_PRECISION_HINT"]
        'bf16'
        >>> OpenVino(threads=2).compile_config()["INFERENCE_NUM_THREADS"]
        '2'
        """
        options = {
            "INFERENCE_PRECISION_HINT": HINTS[self.precision],
            "PERFORMANCE_HINT": self.performance_hint,
        }
        if self.num_streams:
            options["NUM_STREAMS"] = str(self.num_streams)
        if self.threads:
            options["INFERENCE_NUM_THREADS"] = str(self.threads)
        return options

    def compiled(self, graph: OnnxGraph, spec: InputSpec) -> Built:
        """The IR at ``graph.path`` compiled for the CPU with this config's options."""
        import openvino as ov

        core = ov.Core()
        model = core.read_model(str(graph.path), str(graph.path) + IR_WEIGHTS)
        compiled = core.compile_model(model, "CPU", self.compile_config())
        got = compiled.get_property("INFERENCE_PRECISION_HINT")
        info = {
            "device": "cpu",
            "precision": self.computes_in,  # what the accuracy check judges it as
            "quantization": self.quantization,
            "openvino_version": ov.get_version(),
            "inference_precision": str(got),
            "compile_config": self.compile_config(),
        }
        return Built(_runner(compiled, graph, spec), artifact=graph.path, info=info)


def _runner(compiled: Any, graph: OnnxGraph, spec: InputSpec) -> Callable[..., Any]:
    """A synchronous runner over one infer request: numpy views in, torch tensors out in
    the eager structure."""
    request = compiled.create_infer_request()
    flatten = flat_inputs(spec)
    positions = _positions(compiled, graph)
    outputs = list(compiled.outputs)
    rebuild = graph.layout.rebuild

    def runner(*args: torch.Tensor, **kwargs: torch.Tensor) -> Any:
        flat = flatten(*args, **kwargs)
        result = request.infer([flat[p].detach().numpy() for p in positions])
        return rebuild([torch.from_numpy(result[o].copy()) for o in outputs])

    return runner


def _positions(compiled: Any, graph: OnnxGraph) -> list[int]:
    """Where each input of the compiled model sits among the graph's flat inputs; a
    ``RuntimeError`` naming any input the module does not take."""
    names = [p.get_any_name() for p in compiled.inputs]
    unknown = [n for n in names if n not in graph.input_names]
    if unknown:
        raise RuntimeError(f"the OpenVINO model has inputs the module does not take: {unknown}")
    return [graph.input_names.index(n) for n in names]
