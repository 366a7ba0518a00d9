"""Running a serialised TensorRT engine on torch CUDA tensors (TensorRT 10 and 11 API).

Rules:
- the runner binds torch CUDA tensors by address (``set_input_shape``,
  ``set_tensor_address``), allocates outputs with torch and enqueues with
  ``execute_async_v3`` on the device's dedicated stream (:mod:`._streams`: it waits for the
  caller's current stream first, and the caller's stream waits for it after), never on the
  legacy default stream; outputs come back in the eager module's structure;
- :meth:`EngineRunner.precision` reads the engine's effective precision back
  (:func:`._precision.engine_precision`);
- the engine is deserialised, and every call enqueued, with the tuned CUDA device current
  (``torch.cuda.device``), whichever device the caller had current;
- an input shape beyond the engine's optimisation profile is an error naming the input;
- one call at a time per runner: the execution context holds the bound shapes and
  addresses from ``set_input_shape`` to ``execute_async_v3``, so concurrent calls (serving
  runs a request alone in a thread beside a batch) are serialised by the runner's lock,
  and each call gets the rows of its own inputs;
- TensorRT's warnings and errors go to the log of the build or load under way, through
  the process's one logger (:func:`logging_into`);
- ``tensorrt`` is imported only inside this module's functions.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from typing import Any

import torch

from aitune_fp.effects.backends._build_guard import BuildLog
from aitune_fp.effects.backends._export import flat_inputs
from aitune_fp.effects.backends._onnx import OnnxGraph
from aitune_fp.effects.backends._precision import engine_precision
from aitune_fp.effects.backends._streams import (
    dedicated_stream,
    device_context,
    enter,
    leave,
    on_device,
)
from aitune_fp.effects.inputs.samples import InputSpec

_LOGGER: dict[str, Any] = {}
"""The process's one TensorRT logger (``"logger"``) and the logs it writes into
(``"into"``, innermost last)."""


@contextlib.contextmanager
def logging_into(log: BuildLog) -> Iterator[Any]:
    """While open, TensorRT's warnings and errors go to ``log``; yields the logger to pass
    to ``trt.Builder``/``trt.Runtime``/``trt.OnnxParser``.

    TensorRT keeps a single logger pointer per process: a builder, runtime or refitter
    created while another one lives keeps the existing logger and ignores the new one
    (its own warning: "TensorRT maintains only a single logger pointer at any given time,
    so the existing value ... will be used instead", NVIDIA/TensorRT#1475). So there is
    one logger for the process, forwarding each message to the log of the build or load
    under way (outside any, to the ``aitune_fp`` Python logger).
    """
    into: list[BuildLog] = _LOGGER.setdefault("into", [])
    into.append(log)
    try:
        yield _process_logger()
    finally:
        into.remove(log)


def _process_logger() -> Any:
    """The one TensorRT logger of this process (made on first use)."""
    import tensorrt as trt

    if "logger" in _LOGGER:
        return _LOGGER["logger"]
    kept = (
        trt.ILogger.Severity.INTERNAL_ERROR,
        trt.ILogger.Severity.ERROR,
        trt.ILogger.Severity.WARNING,
    )

    class _Forwarding(trt.ILogger):  # type: ignore[misc]
        def __init__(self) -> None:
            trt.ILogger.__init__(self)

        def log(self, severity: Any, msg: str) -> None:
            if severity not in kept:
                return
            into: list[BuildLog] = _LOGGER.get("into", [])
            if into:
                into[-1].write(f"tensorrt {severity}: {msg}")
            else:
                logging.getLogger("aitune_fp").warning("tensorrt %s: %s", severity, msg)

    _LOGGER["logger"] = _Forwarding()
    return _LOGGER["logger"]


def _torch_dtype(trt_dtype: Any) -> torch.dtype:
    """The torch dtype of a TensorRT tensor dtype."""
    import tensorrt as trt

    table = {
        trt.float32: torch.float32,
        trt.float16: torch.float16,
        trt.bfloat16: torch.bfloat16,
        trt.int8: torch.int8,
        trt.int32: torch.int32,
        trt.int64: torch.int64,
        trt.bool: torch.bool,
        trt.uint8: torch.uint8,
    }
    if trt_dtype not in table:
        raise TypeError(f"TensorRT tensor type {trt_dtype} has no torch equivalent here")
    return table[trt_dtype]


class EngineRunner:
    """Runs a deserialised engine on torch CUDA tensors; ``close()`` frees the engine."""

    def __init__(
        self,
        engine_bytes: bytes,
        graph: OnnxGraph,
        spec: InputSpec,
        device: torch.device,
        log: BuildLog,
    ) -> None:
        import tensorrt as trt

        self._device = device
        with logging_into(log) as logger, device_context(device):  # the engine's device
            self._runtime = trt.Runtime(logger)
            self._engine = self._runtime.deserialize_cuda_engine(engine_bytes)
            if self._engine is None:
                raise RuntimeError("TensorRT could not deserialise the engine")
            self._context = self._engine.create_execution_context()
        names = [self._engine.get_tensor_name(i) for i in range(self._engine.num_io_tensors)]
        is_input = {n: self._engine.get_tensor_mode(n) == trt.TensorIOMode.INPUT for n in names}
        self._inputs = tuple(
            (n, graph.input_names.index(n), _torch_dtype(self._engine.get_tensor_dtype(n)))
            for n in names
            if is_input[n]
        )
        outputs = sorted((n for n in names if not is_input[n]), key=graph.output_names.index)
        self._outputs = tuple((n, _torch_dtype(self._engine.get_tensor_dtype(n))) for n in outputs)
        self._flatten = flat_inputs(spec)
        self._rebuild = graph.layout.rebuild
        self._stream = dedicated_stream(device)
        self._run = on_device(self._enqueue, device)
        self._lock = threading.Lock()  # one call at a time binds the context (module rules)

    def precision(self, *, tf32: bool) -> tuple[str | None, str]:
        """``(effective precision, where it was read)`` from the engine itself."""
        import tensorrt as trt

        return engine_precision(trt, self._engine, tf32=tf32)

    def __call__(self, *args: torch.Tensor, **kwargs: torch.Tensor) -> Any:
        """Run the engine on the call's tensors, with its device current; outputs in the
        eager structure; one call at a time (the module rules)."""
        with self._lock:
            return self._run(*args, **kwargs)

    def _enqueue(self, *args: torch.Tensor, **kwargs: torch.Tensor) -> Any:
        context = self._context
        flat = self._flatten(*args, **kwargs)
        held = [flat[p].to(dtype).contiguous() for _, p, dtype in self._inputs]
        for (name, _, _), t in zip(self._inputs, held, strict=True):
            if not context.set_input_shape(name, tuple(t.shape)):
                raise RuntimeError(
                    f"input {name!r} of shape {tuple(t.shape)} is outside the engine's "
                    "optimisation profile (rebuild with a larger max_batch_size)"
                )
            context.set_tensor_address(name, t.data_ptr())
        outputs = []
        for name, dtype in self._outputs:
            shape = tuple(context.get_tensor_shape(name))
            if any(d < 0 for d in shape):
                raise RuntimeError(f"output {name!r} has a data-dependent shape {shape}")
            out = torch.empty(shape, dtype=dtype, device=self._device)
            context.set_tensor_address(name, out.data_ptr())
            outputs.append(out)
        stream = self._stream
        caller = enter(stream, self._device)
        ok = context.execute_async_v3(stream.cuda_stream)
        leave(caller, stream)
        if not ok:
            raise RuntimeError("TensorRT execute_async_v3 reported a failure")
        return self._rebuild(outputs)

    def close(self) -> None:
        """Drop the execution context, engine and runtime (frees their device memory)."""
        self._context = None
        self._engine = None
        self._runtime = None
