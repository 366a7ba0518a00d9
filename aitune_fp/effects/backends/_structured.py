"""Structured inputs meet the backends that export a graph of tensors.

Rule: a backend whose declaration does not take containers (``Declaration.containers``:
ONNX Runtime, AOTInductor, TensorRT, Torch-TensorRT, OpenVINO) fails at ``export`` for
samples whose calls are structured (:mod:`aitune_fp.effects.inputs.call_tree`), naming each
container's input and type, before any build or cache lookup: the tune goes on with the
other candidates. Eager and Inductor, which rebuild the containers at every call, take them.
"""

from __future__ import annotations

from aitune_fp.core.records import BackendFailure
from aitune_fp.effects.backends.base import Backend
from aitune_fp.effects.inputs.samples import Samples


def refused_containers(backend: Backend, samples: Samples) -> BackendFailure | None:
    """The failure of ``backend`` on structured ``samples`` (``None``: it takes them).

    >>> import torch
    >>> from aitune_fp.effects.backends.eager import TorchEager
    >>> from aitune_fp.effects.backends.ort import OnnxRuntime
    >>> from aitune_fp.effects.inputs.samples import normalise_samples
    >>> s = normalise_samples([{"x": torch.zeros(2, 3), "pair": (torch.ones(2), 4)}])
    >>> refused_containers(TorchEager(), s) is None
    True
    >>> refused_containers(OnnxRuntime(), s).message.split(":")[0]
    "input 'pair' is a tuple"
    """
    tree = samples.spec.tree
    if tree is None or backend.declaration.containers:
        return None
    return BackendFailure(
        backend.describe(),
        "export",
        f"{tree.describe()}: {backend.name} exports a graph of tensor inputs, which cannot "
        "take this container (eager and inductor run it)",
    )
