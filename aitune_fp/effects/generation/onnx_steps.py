"""ONNX Runtime prefill and decode with the KV cache as inputs and outputs.

Rules: the step is :class:`CacheStep` with every layer's updated keys and values returned as
outputs (an ONNX graph has no in-place inputs), exported by ``torch.export`` then the dynamo
ONNX exporter with the same dynamic batch, length and capacity as the AOTInductor program; the
graph is kept on disk next to the AOTInductor packages under the same key. The stepper keeps
the cache as numpy arrays, feeds them to each step and takes the returned ones as the cache
for the next step; masks and positions are as in :mod:`aitune_fp.effects.generation.static_steps`.
It runs on ONNX Runtime's CPU provider only: a model on another device is refused when the
stepper is made (a ``ValueError`` naming the device), never fed CPU arrays.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from aitune_fp.effects.generation.aoti_steps import package_dir, package_key
from aitune_fp.effects.generation.cache_module import CacheStep, empty_cache
from aitune_fp.effects.generation.host_steps import HostSteps


class CacheStepIO(CacheStep):
    """:class:`CacheStep` returning (logits, *keys, *values) after the update."""

    def forward(  # type: ignore[override]
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        position_ids: torch.Tensor,
        cache_position: torch.Tensor,
        keys: list[torch.Tensor],
        values: list[torch.Tensor],
    ) -> tuple[torch.Tensor, ...]:
        """The next-token logits, then the updated keys and values of every layer."""
        logits = super().forward(
            input_ids, attention_mask, position_ids, cache_position, keys, values
        )
        return (logits, *[k.clone() for k in keys], *[v.clone() for v in values])


def _export(model: torch.nn.Module, path: Path) -> None:
    from aitune_fp.effects.generation.aoti_steps import export_program

    program = export_program(CacheStepIO(model), model)
    torch.onnx.export(program, f=str(path), dynamo=True)


def onnx_graph(model: torch.nn.Module) -> Path:
    """The model's step as an ONNX graph (with its external data file beside it, in a folder
    of its own): from disk when exported before, else exported here."""
    folder = package_dir()
    done = folder / f"{package_key(model)}.onnx"
    if not (done / "step.onnx").exists():
        folder.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(dir=folder))
        _export(model, work / "step.onnx")
        os.replace(work, done)
    return done / "step.onnx"


class OnnxStepper(HostSteps):
    """Prefill and decode on ONNX Runtime (CPU), the cache fed in and taken back."""

    def __init__(self, model: torch.nn.Module, budget_s: float = 600.0) -> None:
        import onnxruntime as ort

        from aitune_fp.effects.generation.devices import model_device

        device = model_device(model)
        if device.type != "cpu":
            raise ValueError(
                f"the ONNX Runtime stepper runs on the CPU provider only; refused for a "
                f"model on {device}"
            )
        del budget_s  # the export runs here; ONNX Runtime builds no kernels ahead
        self.model = model
        self._session = ort.InferenceSession(
            str(onnx_graph(model)), providers=["CPUExecutionProvider"]
        )
        self._names = [i.name for i in self._session.get_inputs()]
        self._keys: list[np.ndarray[Any, Any]] = []
        self._values: list[np.ndarray[Any, Any]] = []
        self._mask: np.ndarray[Any, Any] = np.ones(0, dtype=np.int64)
        self._next_pos: np.ndarray[Any, Any] = np.zeros(0, dtype=np.int64)
        self._length = 0

    def _reset(self, batch: int, max_len: int) -> None:
        keys, values = empty_cache(self.model, batch, max_len)
        self._keys = [k.float().numpy() for k in keys]
        self._values = [v.float().numpy() for v in values]

    def _run(self, ids: np.ndarray[Any, Any], positions: np.ndarray[Any, Any], start: int) -> Any:
        cache_position = np.arange(start, start + ids.shape[1], dtype=np.int64)
        tensors = [ids, self._mask, positions, cache_position, *self._keys, *self._values]
        outs = self._session.run(None, dict(zip(self._names, tensors, strict=True)))
        layers = len(self._keys)
        self._keys, self._values = outs[1 : 1 + layers], outs[1 + layers :]
        logits: torch.Tensor = torch.from_numpy(outs[0])
        return logits
