"""TensorRT: ONNX → engine with one optimisation profile over the batch axis, run in place.

Rules:
- the module is exported to ``work_dir/model.onnx`` (dynamo exporter, dynamic batch) and
  parsed by TensorRT's ONNX parser; the engine gets one optimisation profile with batch
  ``1`` (min), ``opt_batch_size`` (opt, default ``max_batch_size``) and ``max_batch_size``
  (max) on every input's batch axis, and every dynamic axis of the input spec at its
  declared min, the samples' median size (opt) and its max; it is serialised to
  ``work_dir/model.engine``;
- TensorRT 10.x and 11.x are supported (:mod:`._versions`); ``fp16`` (``bf16``) uses the
  mechanism the installed API offers (:mod:`._precision`): the ``FP16`` (``BF16``) builder
  flag on 10.x, a module computing in float16 (bfloat16) between dtype-preserving casts,
  built as a strongly typed network, on 11.x; TF32 is off unless ``tf32``; ``fp16`` is in
  the default search on CUDA, ``bf16`` in the wide one;
- the record says what the engine got, read back from it: ``info`` holds
  ``tensorrt_version``, ``precision_mechanism``, ``requested_precision``, ``precision``
  (effective) and ``precision_source``; on 11.x an fp16 (bf16) request whose engine has no
  float16 (bfloat16) layer is a build failure (nothing can explain it but a quiet degradation);
- the engine is run by :class:`~._trt_runtime.EngineRunner` on torch CUDA tensors, on the
  device's dedicated stream; a batch beyond the profile is an error naming it;
- ``tensorrt`` is imported only inside this module's functions.

Longer than 260 lines: one backend in one file, the house's rule (as ``openvino.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Final

import torch
from returns.io import IOResult

from aitune_fp.core.records import BackendFailure
from aitune_fp.effects.backends._availability import cuda_backend_reason
from aitune_fp.effects.backends._build_guard import BuildLog, available_build
from aitune_fp.effects.backends._engine_settings import EngineConfig
from aitune_fp.effects.backends._onnx import OnnxGraph, export_onnx, saved_graph
from aitune_fp.effects.backends._precision import (
    ComputeIn,
    TrtPrecisionPlan,
    configure,
    network_flags,
    output_dtypes,
    trt_precision_plan,
)
from aitune_fp.effects.backends._runner import prepared
from aitune_fp.effects.backends._trt_runtime import EngineRunner, logging_into
from aitune_fp.effects.backends._versions import unsupported
from aitune_fp.effects.backends.base import (
    Built,
    ConfigIdentity,
    Declaration,
    Library,
    LoadRequest,
)
from aitune_fp.effects.inputs.samples import InputSpec, Samples

TENSORRT: Final = Library(
    "tensorrt",
    (
        "tensorrt",
        "tensorrt-cu13",
        "tensorrt-cu12",
        "tensorrt-cu11",
        "tensorrt-cu13-bindings",
        "tensorrt-cu12-bindings",
    ),
    supported=((10, 0), (12,)),
)
"""TensorRT 10.x and 11.x (see :mod:`._versions`)."""


def _load_engine(config: TensorRT, request: LoadRequest) -> Built:
    """A saved engine run in place, judged as its build was: its precision read back and
    recorded by :func:`precision_facts` with the config's own plan (on the builder-flag path
    the requested precision, since the inspector can list fp16 Myelin layers as float32; a
    cache hit judged at the read-back would fail the float32 bound and be rebuilt)."""
    import tensorrt as trt

    plan = trt_precision_plan(trt, fp16=config.fp16, tf32=config.tf32, bf16=config.bf16)
    graph = saved_graph(request.artifact, request.spec, request.outputs)
    engine = request.artifact.read_bytes()
    runner = EngineRunner(engine, graph, request.spec, request.device, request.log)
    effective, source = runner.precision(tf32=config.tf32)
    info = {"device": str(request.device), **precision_facts(plan, effective, source)}
    return Built(runner, runner.close, artifact=request.artifact, info=info)


@dataclass(frozen=True, slots=True)
class TensorRT(EngineConfig, ConfigIdentity):
    """Build a TensorRT engine from the ONNX export and run it with torch tensors.

    ``workspace_mib`` caps TensorRT's scratch memory (None: TensorRT's default).

    >>> TensorRT(fp16=True).describe(), TensorRT(bf16=True).computes_in
    ('tensorrt(fp16=True)', 'bfloat16')
    >>> TensorRT().unavailable_reason(torch.device("cpu"))
    'needs a CUDA device'
    >>> TensorRT(max_batch_size=8, opt_batch_size=16)
    Traceback (most recent call last):
    ...
    ValueError: need 1 <= opt_batch_size <= max_batch_size, got 16 and 8
    """

    declaration: ClassVar[Declaration] = Declaration(
        order=40,
        compiles=True,
        libraries=("torch.onnx", "onnxscript", "tensorrt"),
        server_skips=("tensorrt",),  # it may touch CUDA on import
        sdks=("tensorrt",),
        sdk_modules=("aitune_fp.effects.backends._trt_runtime",),
        versions=(Library("onnx", ("onnx",)), TENSORRT),
        extra="tensorrt",
        loader=_load_engine,
        defaults={"cuda": ({},)},
        variants={"default": {"cuda": ({"fp16": True},)}, "wide": {"cuda": ({"bf16": True},)}},
        times_kernels=True,  # its builder times tactics
    )

    fp16: bool = False
    tf32: bool = False
    workspace_mib: int | None = None
    max_batch_size: int = 1024
    opt_batch_size: int | None = None
    bf16: bool = False
    name: str = field(default="tensorrt", init=False)

    def __post_init__(self) -> None:
        self.engine  # noqa: B018  (checks the batch range)
        if self.workspace_mib is not None and self.workspace_mib < 1:
            raise ValueError(f"workspace_mib must be >= 1, got {self.workspace_mib}")

    def unavailable_reason(self, device: torch.device) -> str | None:
        """Needs a CUDA device, ``tensorrt`` (a supported version) and ``onnxscript``."""
        return cuda_backend_reason(device, "tensorrt", "onnxscript") or unsupported("tensorrt")

    def build(
        self, module: torch.nn.Module, samples: Samples, device: torch.device, work_dir: Path
    ) -> IOResult[Built, BackendFailure]:
        """Export to ONNX, build and save the engine, load it and run the first sample."""

        def build(log: BuildLog) -> Built:
            import tensorrt as trt

            plan = trt_precision_plan(trt, fp16=self.fp16, tf32=self.tf32, bf16=self.bf16)
            log.write(f"tensorrt {plan.version}: precision {plan.requested} by {plan.mechanism}")
            model = self._typed(prepared(module, device), samples, device, plan)
            graph = export_onnx(
                model,
                samples,
                device,
                work_dir / "model.onnx",
                log,
                max_batch_size=self.max_batch_size,
            )
            with torch.cuda.device(device):
                engine_bytes = self._engine(graph, samples.spec, log, plan)
                path = work_dir / "model.engine"
                path.write_bytes(engine_bytes)
                runner = EngineRunner(engine_bytes, graph, samples.spec, device, log)
                effective, source = runner.precision(tf32=self.tf32)
                check_effective(plan, effective)
                samples.items[0].to(device).call(runner)
            info = {
                "tensorrt_version": plan.version,
                "precision_mechanism": plan.mechanism,
                "requested_precision": plan.requested,
                **precision_facts(plan, effective, source),
                "max_batch_size": self.max_batch_size,
                "export": graph.export,
                "device": str(device),
            }
            return Built(runner, runner.close, artifact=path, info=info)

        return available_build(self, device, work_dir, build)

    @staticmethod
    def _typed(
        model: torch.nn.Module, samples: Samples, device: torch.device, plan: TrtPrecisionPlan
    ) -> torch.nn.Module:
        """The module to export: as is, or computing in the plan's dtype (strong typing)."""
        if plan.cast_to is None:
            return model
        with torch.inference_mode():
            dtypes = output_dtypes(samples.items[0].to(device).call(model))
        return ComputeIn(model, plan.cast_to, dtypes).eval()

    def _engine(
        self, graph: OnnxGraph, spec: InputSpec, log: BuildLog, plan: TrtPrecisionPlan
    ) -> bytes:
        """Parse the ONNX file and build a serialised engine with the batch profile."""
        with logging_into(log) as logger:
            return self._engine_logged(graph, spec, log, plan, logger)

    def _engine_logged(
        self, graph: OnnxGraph, spec: InputSpec, log: BuildLog, plan: TrtPrecisionPlan, logger: Any
    ) -> bytes:
        """:meth:`_engine` with TensorRT's ``logger`` writing into ``log``."""
        import tensorrt as trt

        builder = trt.Builder(logger)
        network = builder.create_network(network_flags(trt, plan))
        parser = trt.OnnxParser(network, logger)
        if not parser.parse_from_file(str(graph.path)):
            errors = "; ".join(str(parser.get_error(i)) for i in range(parser.num_errors))
            raise RuntimeError(f"TensorRT could not parse the ONNX graph: {errors}")
        config = builder.create_builder_config()
        if self.workspace_mib is not None:
            config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, self.workspace_mib << 20)
        configure(trt, config, plan)
        profile = builder.create_optimization_profile()
        rows = {t.name: t for t in spec.tensors}
        axis = spec.batch_axis
        for i in range(network.num_inputs):
            name = network.get_input(i).name
            row = rows[name]
            profile.set_shape(name, *row.profile((1, self.opt_batch, self.max_batch_size), axis))
        config.add_optimization_profile(profile)
        serialized = builder.build_serialized_network(network, config)
        if serialized is None:
            raise RuntimeError("TensorRT could not build the engine (its log is above)")
        log.write(
            f"engine built: {network.num_inputs} inputs, profile max batch {self.max_batch_size}"
        )
        return bytes(serialized)


def check_effective(plan: TrtPrecisionPlan, effective: str | None) -> None:
    """Refuse a strongly typed fp16 (bf16) build whose engine has no float16 (bfloat16) layer.

    On the builder-flag path TensorRT may keep float32 where it is faster, so a float32
    engine is recorded as such, not refused.

    >>> plan = TrtPrecisionPlan("11.0", "strongly_typed_cast", "float16", (), (), (), None)
    >>> check_effective(plan, "float32")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    RuntimeError: asked for float16 (strongly_typed_cast on TensorRT 11.0) but ... float32
    """
    if plan.mechanism == "strongly_typed_cast" and effective not in (None, plan.requested):
        raise RuntimeError(
            f"asked for {plan.requested} ({plan.mechanism} on TensorRT {plan.version}) "
            f"but the engine's layers are {effective}"
        )


def precision_facts(plan: TrtPrecisionPlan, effective: str | None, source: str) -> dict[str, str]:
    """The engine's precision as the build records it: ``precision`` (what validation
    judges it at) and the read-back beside it.

    On the builder-flag path the judged precision is the requested one: the engine
    inspector can list fused Myelin ``{ForeignNode[...]}`` layers as float32 although they
    compute in the requested half precision, so the read-back may under-report and a valid
    fp16/bf16 engine would be judged at the float32 bound. On the strongly typed path the
    read-back is what the engine computes in (:func:`check_effective` refused a mismatch).

    >>> flag = TrtPrecisionPlan("10.16", "builder_flag", "float16", (), (), (), None)
    >>> precision_facts(flag, "float32", "engine_layers")["precision"]
    'float16'
    >>> precision_facts(flag, "float32", "engine_layers")["precision_read_back"]
    'float32'
    """
    judged = plan.requested if plan.mechanism == "builder_flag" else effective or plan.requested
    return {
        "precision": judged,
        "precision_read_back": effective or "none",
        "precision_source": source if effective else "unverified (engine gave no types)",
    }
