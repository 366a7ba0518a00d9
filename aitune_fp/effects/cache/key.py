"""The cache key: a digest of everything a built artifact depends on.

Rules:
- :func:`model_digest` is what the module is and does: its weights (every parameter and
  buffer, by name, dtype, shape and bytes), its structure (``repr``) and its behaviour
  (:func:`~aitune_fp.effects.cache.fingerprint.behaviour_digest`: the code it runs and every
  attribute, config, global, helper function and hook that code reads). The import name
  is never part of it, so keys match across processes and import paths;
- :func:`cache_key` adds the input spec, the batch envelope the build runs in (an
  exporter's example rows and batch bound: a one-row envelope exports a static batch), the
  backend's kind, config key without its runtime options (threads, ONNX Runtime's graph
  optimisation: :mod:`~aitune_fp.effects.backends._runtime_fields`) and implementation (a
  calibrated variant, static int8, also the samples' values it was calibrated on)
  source, the device (and GPU model), and the versions of Python and of every inference
  library (those the shipped backends and this one declare).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import platform
from pathlib import Path

import torch

from aitune_fp.effects.backends._export import UNBOUNDED_BATCH, envelope_bound, example_rows
from aitune_fp.effects.backends._runtime_fields import artifact_key
from aitune_fp.effects.backends.base import Backend
from aitune_fp.effects.cache.fingerprint import behaviour_digest
from aitune_fp.effects.cache.reference import hash_tensor, samples_digest
from aitune_fp.effects.inputs.samples import Samples
from aitune_fp.effects.machine.environment import library_versions


def weights_digest(module: torch.nn.Module) -> str:
    """sha256 of every parameter and buffer of ``module``: name, dtype, shape and bytes.

    >>> a = torch.nn.Linear(2, 2)
    >>> weights_digest(a) == weights_digest(a), weights_digest(a) == weights_digest(
    ...     torch.nn.Linear(2, 2))
    (True, False)
    """
    h = hashlib.sha256()
    tensors: dict[str, torch.Tensor] = dict(module.named_parameters(remove_duplicate=False))
    tensors.update(module.named_buffers(remove_duplicate=False))
    for name in sorted(tensors):
        hash_tensor(h, name, tensors[name])
    return h.hexdigest()


def code_digest(module: torch.nn.Module) -> str:
    """sha256 of the module tree's structure (``repr``) and behaviour (the code it runs and
    the values that code reads, :func:`~aitune_fp.effects.cache.fingerprint.behaviour_digest`).

    The import name (``__module__``) of the user's code is left out on purpose: the same
    file imported under another name, or in another process, gives the same digest.
    """
    h = hashlib.sha256(repr(module).encode())
    h.update(behaviour_digest(module).encode())
    return h.hexdigest()


def model_digest(module: torch.nn.Module) -> str:
    """sha256 of the module's code and behaviour (:func:`code_digest`) and weights
    (:func:`weights_digest`).

    >>> a = torch.nn.Linear(2, 2)
    >>> model_digest(a) == model_digest(a), model_digest(a) == model_digest(torch.nn.ReLU())
    (True, False)
    """
    both = f"{code_digest(module)}|{weights_digest(module)}"
    return hashlib.sha256(both.encode()).hexdigest()


def implementation_digest(backend: Backend) -> str:
    """sha256 of the source file that implements ``backend`` (a changed builder misses)."""
    try:
        source = inspect.getsourcefile(type(backend))
        return hashlib.sha256(Path(source).read_bytes()).hexdigest() if source else ""
    except (OSError, TypeError):
        return ""


def _device_facts(device: torch.device) -> str:
    if device.type == "cuda" and torch.cuda.is_available():
        index = device.index if device.index is not None else torch.cuda.current_device()
        props = torch.cuda.get_device_properties(index)
        return f"cuda|{props.name}|{props.major}.{props.minor}"
    return device.type


def cache_key(
    module: torch.nn.Module,
    samples: Samples,
    backend: Backend,
    device: torch.device,
    model: str | None = None,
) -> str:
    """The cache key of building ``backend`` for ``module`` with these inputs on ``device``
    (``model``: the module's :func:`model_digest`, when the caller has it already)."""
    parts = {
        "model": model or model_digest(module),
        "inputs": repr(samples.spec),
        "envelope": [example_rows(), envelope_bound(UNBOUNDED_BATCH)],
        "backend": [backend.name, artifact_key(backend), implementation_digest(backend)],
        "device": _device_facts(device),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "libraries": library_versions((backend,)),
    }
    if backend.calibrated:  # a calibration depends on the samples' values
        parts["calibration"] = samples_digest(samples)
    blob = json.dumps(parts, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:32]
