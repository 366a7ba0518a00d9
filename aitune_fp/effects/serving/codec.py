"""Request bodies to tensors and outputs to response bodies (the documented tensor format).

Rules:
- ``application/json``: ``{"inputs": {"<name>": <nested array>, ...}}`` with every input
  of the model by name; a number's dtype is the input's (checked by
  :func:`aitune_fp.core.serving.schema.check_json_array`); the response is ``{"outputs":
  {"output_0": <nested array>, ...}}``, the outputs in the model's output order;
- ``application/x-npy``: the bytes of one ``.npy`` array, for a model with one input;
  ``application/x-npz``: a NumPy ``.npz`` archive, one array per input name; the response
  to either is an ``.npz`` archive of ``output_0`` …; arrays are read with
  ``allow_pickle=False``; an array's dtype must be the input's (no silent cast);
- any other content type is refused with 415; every refusal is a
  :class:`~aitune_fp.core.serving.schema.PayloadError` (status and one line), never an
  exception.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Mapping
from typing import Any, Final

import numpy as np
import torch
import torch.utils._pytree as pytree

from aitune_fp.core.serving.schema import (
    PayloadError,
    TensorSig,
    check_json_array,
    check_names,
    dtype_problem,
    shape_problem,
)
from aitune_fp.effects.inputs.spec import InputSpec

JSON: Final = "application/json"
NPY: Final = "application/x-npy"
NPZ: Final = "application/x-npz"
FORMATS: Final = (JSON, NPY, NPZ)
MAGIC: Final = {NPY: b"\x93NUMPY", NPZ: b"PK"}

Tensors = dict[str, torch.Tensor]


def input_sigs(spec: InputSpec) -> tuple[TensorSig, ...]:
    """Each input's signature: its batched shape with ``-1`` on the batch and dynamic axes."""
    sigs = []
    for t in spec.tensors:
        dims = list(t.shape(1, spec.batch_axis))
        dims[spec.batch_axis] = -1
        for d in t.dynamic:
            dims[d.axis] = -1
        sigs.append(TensorSig(t.name, t.dtype, tuple(dims)))
    return tuple(sigs)


def media_type(header: str | None) -> str:
    """The media type of a ``Content-Type`` header, lower case, parameters dropped (JSON
    when the header is missing).

    >>> media_type("Application/JSON; charset=utf-8"), media_type(None), media_type("")
    ('application/json', 'application/json', 'application/json')
    """
    return (header or JSON).split(";", 1)[0].strip().lower() or JSON


def _from_json(body: bytes, sigs: tuple[TensorSig, ...]) -> Tensors | PayloadError:
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError) as error:
        return PayloadError(400, f"the body is not JSON: {str(error).splitlines()[0]}")
    inputs = doc.get("inputs") if isinstance(doc, dict) else None
    if not isinstance(inputs, dict):
        return PayloadError(400, 'the body must be a JSON object {"inputs": {"<name>": array}}')
    refused = check_names(sigs, list(inputs))
    if refused is not None:
        return refused
    tensors: Tensors = {}
    for sig in sigs:
        shape = check_json_array(sig, inputs[sig.name])
        if isinstance(shape, PayloadError):
            return shape
        try:
            tensors[sig.name] = torch.tensor(inputs[sig.name], dtype=getattr(torch, sig.dtype))
        except (ValueError, RuntimeError, OverflowError, TypeError) as error:  # beyond the dtype
            first = (str(error).strip().splitlines() or [type(error).__name__])[0]
            return PayloadError(422, f"{sig.name} does not fit {sig.dtype}: {first}")
    return tensors


def _array(sig: TensorSig, array: Any) -> torch.Tensor | PayloadError:
    if not isinstance(array, np.ndarray) or array.dtype.hasobject:
        return PayloadError(400, f"{sig.name} is not a numeric array")
    problem = dtype_problem(sig, array.dtype.name) or shape_problem(sig, array.shape)
    if problem is not None:
        return PayloadError(422, problem)
    return torch.from_numpy(np.ascontiguousarray(array))


def _from_numpy(body: bytes, kind: str, sigs: tuple[TensorSig, ...]) -> Tensors | PayloadError:
    if kind == NPY and len(sigs) != 1:
        names = ", ".join(s.name for s in sigs)
        return PayloadError(400, f"the model takes {len(sigs)} inputs ({names}): send {NPZ}")
    what = "an .npy array" if kind == NPY else "an .npz archive"
    if not body.startswith(MAGIC[kind]):
        return PayloadError(400, f"the body is not {what}: it does not start with {MAGIC[kind]!r}")
    try:
        loaded = np.load(io.BytesIO(body), allow_pickle=False)
        arrays = {sigs[0].name: loaded} if kind == NPY else {k: loaded[k] for k in loaded.files}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, KeyError) as error:
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        return PayloadError(400, f"the body is not {what}: {first}")
    if kind == NPY and not isinstance(arrays[sigs[0].name], np.ndarray):
        return PayloadError(400, f"the body is not an .npy array (got {NPZ}?)")
    refused = check_names(sigs, list(arrays))
    if refused is not None:
        return refused
    tensors: Tensors = {}
    for sig in sigs:
        tensor = _array(sig, arrays[sig.name])
        if isinstance(tensor, PayloadError):
            return tensor
        tensors[sig.name] = tensor
    return tensors


def decode(
    content_type: str | None, body: bytes, sigs: tuple[TensorSig, ...]
) -> Tensors | PayloadError:
    """The named input tensors of a request body, or why it is refused (module rules)."""
    kind = media_type(content_type)
    if kind == JSON:
        return _from_json(body, sigs)
    if kind in (NPY, NPZ):
        return _from_numpy(body, kind, sigs)
    return PayloadError(415, f"unsupported content type {kind!r}; use {', '.join(FORMATS)}")


def output_leaves(outputs: Any) -> dict[str, torch.Tensor]:
    """The model's outputs by name, ``output_0`` … in the output structure's order.

    >>> named = output_leaves({"logits": torch.ones(1, 2), "extra": (torch.zeros(1),)})
    >>> {name: tuple(t.shape) for name, t in named.items()}
    {'output_0': (1, 2), 'output_1': (1,)}
    """
    leaves = pytree.tree_leaves(outputs)
    return {f"output_{i}": t.detach().cpu() for i, t in enumerate(leaves)}


def encode(outputs: Any, request_type: str) -> tuple[str, bytes]:
    """The response's content type and body for ``outputs`` (JSON for a JSON request, an
    ``.npz`` archive for ``.npy``/``.npz`` requests)."""
    named = output_leaves(outputs)
    if request_type == JSON:
        doc = {"outputs": {k: v.tolist() for k, v in named.items()}}
        return JSON, json.dumps(doc).encode()
    buffer = io.BytesIO()
    np.savez(buffer, **{k: _numpy(v) for k, v in named.items()})
    return NPZ, buffer.getvalue()


def _numpy(tensor: torch.Tensor) -> Any:
    if tensor.dtype == torch.bfloat16:
        tensor = tensor.float()
    return tensor.numpy()


def error_body(reason: str) -> bytes:
    """A refusal's JSON body: ``{"error": "<one line>"}``.

    >>> error_body("input_0 has shape (2, 3),\\n  expected (-1, 4)")
    b'{"error": "input_0 has shape (2, 3), expected (-1, 4)"}'
    """
    return json.dumps({"error": " ".join(reason.split())}).encode()


def as_call(
    tensors: Mapping[str, torch.Tensor], spec: InputSpec
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The module's call for named tensors: positional inputs in order, then keywords."""
    return tuple(tensors[n] for n in spec.positional), {k: tensors[k] for k in spec.keywords}
