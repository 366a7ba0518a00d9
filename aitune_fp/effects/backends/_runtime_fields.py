"""Runtime options: config fields applied when the runner runs, not when it is built.

Rules:
- a config field declared with :func:`runtime_option` (ONNX Runtime's intra-op threads,
  graph optimisation level and execution mode; torch's intra-op threads) changes how the
  built artifact is *run*, never the artifact itself: the ONNX file saved is the export
  (or its quantized form), and the session options are applied when it is opened;
- so :func:`artifact_key`, the backend part of the artifact cache's key, leaves those
  fields out: ``onnxruntime(intra_op_threads=1)`` reuses the entry of ``onnxruntime``
  (loading it opens the session with its own options), while ``describe()`` and ``key()``
  still tell the two configs apart (they are different candidates);
- a config with no runtime option keeps exactly its ``key()``, so no existing cache entry
  changes its key;
- a field declared with :func:`keyed_when_set` (default ``None``) is in ``key()`` and
  :func:`artifact_key` only when it is set: a field added to a config that way leaves the
  key of every config that does not set it as it was (ONNX Runtime's TensorRT
  ``opt_batch_size``: CPU and CUDA configs never set it, so their cache entries stand).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable
from types import MappingProxyType
from typing import Any, Final

RUNTIME: Final = MappingProxyType({"runtime_option": True})
WHEN_SET: Final = MappingProxyType({"keyed_when_set": True})


def runtime_option(default: Any) -> Any:
    """A dataclass field with ``default`` marked as a runtime option (see the rules)."""
    return dataclasses.field(default=default, metadata=RUNTIME)


def keyed_when_set() -> Any:
    """A dataclass field defaulting to ``None`` that enters the keys only when set (see
    the rules)."""
    return dataclasses.field(default=None, metadata=WHEN_SET)


def keyed_fields(config: Any) -> list[dataclasses.Field[Any]]:
    """``config``'s fields that enter its ``key()``: all but a :func:`keyed_when_set` one
    left at ``None``."""
    kept = []
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if value is not None or not f.metadata.get("keyed_when_set"):
            kept.append(f)
    return kept


def artifact_key(config: Any) -> str:
    """``config.key()`` without its runtime options (a 16-hex-digit hash).

    >>> from aitune_fp.effects.backends.ort import OnnxRuntime
    >>> base = artifact_key(OnnxRuntime())
    >>> base == artifact_key(OnnxRuntime(intra_op_threads=1, graph_optimization="basic"))
    True
    >>> base == artifact_key(OnnxRuntime(precision="int8-dynamic"))
    False
    """
    own_key: Callable[[], str] = config.key
    if not dataclasses.is_dataclass(config) or isinstance(config, type):
        return own_key()
    fields = keyed_fields(config)
    kept = [f for f in fields if not f.metadata.get("runtime_option")]
    if len(kept) == len(fields):
        return own_key()
    values = dataclasses.asdict(config)
    payload = {"type": type(config).__qualname__, **{f.name: values[f.name] for f in kept}}
    blob = json.dumps(payload, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]
