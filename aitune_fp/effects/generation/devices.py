"""Where a generation model runs, how its phases are timed there, and what may run there.

Rules:
- a model's device is its first parameter's (else its first buffer's; else the CPU); every
  tensor a tune or a stepper makes (prompts, held-out ids, the static cache, masks,
  positions, ``cache_position``) is made on it (:func:`to_device`), so a CUDA model never
  meets a CPU tensor (a device-mismatch traceback);
- on CUDA a call is timed with CUDA events recorded on the device's current stream, the
  end event waited for (:func:`elapsed_ms`): the queued kernels are in the figure, as they
  are in Hugging Face ``generate``, which synchronises every token; HF ``generate``'s token
  stamps synchronise the device before reading the clock (:func:`synchronize`); elsewhere
  the wall clock (``time.perf_counter``) as before;
- a candidate runs on a CUDA device only once a GPU has proven it (:data:`PROVEN_ON_CUDA`,
  empty: no lent GPU has run the generation candidates yet); until then it is refused
  there with a reason naming the candidate, the device and why (:func:`refusal`), recorded
  as the candidate's failure instead of building it. ONNX Runtime's and OpenVINO's steppers
  run on the CPU (numpy arrays in and out) and are refused on CUDA for that reason whatever
  is proven (a candidate's family is its name's first word: its thread twins included);
- a CUDA-only candidate (:data:`CUDA_ONLY`: the CUDA-graph decode step) is not offered off
  CUDA (:func:`offered`: a default tune on a CPU model does not list it, so its candidates
  and decision-cache keys are as before), and asked for by name there it is refused with
  the reason "needs a CUDA device", recorded as its failure, never built.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

import torch

PROVEN_ON_CUDA: frozenset[str] = frozenset()
"""Candidates a lent GPU has run and checked (teacher-forced accuracy and CUDA-event
timings in the GPU check's record); none yet."""
CPU_ONLY = frozenset({"onnx", "openvino"})
"""Candidate families (a name's first word) whose steps run on the CPU whatever the
model's device."""
CUDA_ONLY = frozenset({"cudagraph"})
"""Candidate families that run only on a CUDA device (a CUDA graph captures the decode
step)."""


def model_device(model: Any) -> torch.device:
    """The device ``model``'s first parameter (else buffer) is on; the CPU when it has none."""
    for tensors in (model.parameters(), model.buffers()):
        first: torch.Tensor | None = next(iter(tensors), None)
        if first is not None:
            return first.device
    return torch.device("cpu")


def to_device(tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
    """``tensor`` on ``device`` (itself when it is there already)."""
    return tensor.to(device)


def synchronize(device: torch.device) -> None:
    """Wait for ``device``'s queued work (CUDA); nothing elsewhere."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def elapsed_ms(call: Callable[[], Any], device: torch.device | None = None) -> float:
    """Milliseconds ``call`` takes: CUDA events on a CUDA ``device`` (see the module
    rules), the wall clock otherwise."""
    if device is None or device.type != "cuda":
        start = time.perf_counter()
        call()
        return (time.perf_counter() - start) * 1000.0
    stream = torch.cuda.current_stream(device)
    begin = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
    end = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
    begin.record(stream)
    call()
    end.record(stream)
    end.synchronize()
    return float(begin.elapsed_time(end))


def refusal(candidate: str, device: torch.device) -> str | None:
    """Why ``candidate`` may not run on ``device``, or None (see the module rules).

    >>> refusal("eager_static", torch.device("cpu")) is None
    True
    >>> refusal("onnx_static", torch.device("cuda", 0)).split(":")[0]
    'onnx_static refused on cuda'
    >>> "not yet proven on a CUDA device" in refusal("eager_static", torch.device("cuda", 1))
    True
    >>> refusal("cudagraph_static", torch.device("cpu"))
    'cudagraph_static refused on cpu: needs a CUDA device (its decode step is a CUDA graph)'
    """
    if device.type != "cuda":
        needs = "needs a CUDA device (its decode step is a CUDA graph)"
        return (
            f"{candidate} refused on {device}: {needs}" if _family(candidate) in CUDA_ONLY else None
        )
    if _family(candidate) in CPU_ONLY:
        return (
            f"{candidate} refused on {device}: its steps run on a CPU runtime (ONNX Runtime's "
            "CPU provider, OpenVINO's CPU plugin)"
        )
    if candidate not in PROVEN_ON_CUDA:
        return (
            f"{candidate} refused on {device}: not yet proven on a CUDA device (no GPU has "
            "checked its accuracy and CUDA-event timings); Hugging Face generate is measured"
        )
    return None


def offered(names: Iterable[str], device: torch.device) -> tuple[str, ...]:
    """The candidates of ``names`` a default tune lists on ``device`` (in order; see the
    module rules).

    >>> offered(["eager_static", "cudagraph_static"], torch.device("cpu"))
    ('eager_static',)
    >>> offered(["eager_static", "cudagraph_static"], torch.device("cuda", 0))
    ('eager_static', 'cudagraph_static')
    """
    return tuple(n for n in names if device.type == "cuda" or _family(n) not in CUDA_ONLY)


def _family(candidate: str) -> str:
    """A candidate's family: its name's first word (``openvino_static_int8_1thread``:
    ``openvino``)."""
    return candidate.split("_")[0]


def refusals(names: Iterable[str], device: torch.device) -> dict[str, str]:
    """Each refused candidate of ``names`` with its reason on ``device``."""
    return {n: why for n in names if (why := refusal(n, device)) is not None}
