"""The behaviour probe: a cache entry proves it was built for the module asking for it.

A key is a digest of what the module is; a probe checks what it does. Every entry keeps
one eager call of the module it was built for — its batch-1 inputs and outputs — and a hit
is trusted only when the module asking for it gives the same outputs on those inputs now.

Rules:
- the probe file (``probe.pt``) holds the inputs of one call (positional and keyword
  tensors, on the CPU, plus the JSON of its call tree when its inputs hold containers,
  :mod:`aitune_fp.effects.inputs.call_tree`) and the eager outputs as leaves plus their
  structure's description
  (:func:`~aitune_fp.effects.inputs.containers.to_stored`: a ``ModelOutput`` or a KV cache is kept
  as tensors and JSON text, never as its class); it is one more listed, sealed file of the
  entry, read back with ``torch.load(weights_only=True)`` (nothing is unpickled);
- :func:`probe_problem` runs the module on the stored inputs (on the device, in inference
  mode) and compares: the same output structure, and every tensor of the same dtype and
  shape within :data:`PROBE_RTOL` / :data:`PROBE_ATOL` (scaled by the output's magnitude)
  — eager against eager on one machine, so only run-to-run noise is allowed, far below any
  validation bound; anything else is a reason (one line), and the caller treats the entry
  as a miss: it is discarded and rebuilt, never run;
- a missing or unreadable probe is a reason too: an entry that cannot show whose it is
  is never trusted;
- the probe is the judge for whatever the key cannot see (a deep monkeypatch, a swapped
  entry, a restored folder); the eager reference of the validation batches is used only
  after the probe passed, so a stored reference is never the only judge of a hit.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import torch
import torch.utils._pytree as pytree

from aitune_fp.effects.inputs.call_tree import tree_from_json, tree_to_json
from aitune_fp.effects.inputs.containers import describe, flatten, to_stored
from aitune_fp.effects.inputs.spec import Batch

PROBE_FILE: Final = "probe.pt"
PROBE_RTOL: Final = 1e-5
PROBE_ATOL: Final = 1e-6


def _cpu(tree: Any) -> Any:
    return pytree.tree_map(
        lambda t: t.detach().to("cpu").clone() if isinstance(t, torch.Tensor) else t, tree
    )


def write_probe(path: Path, batch: Batch, outputs: Any) -> bool:
    """Write the probe of one call (``batch`` → ``outputs``); ``False`` (and no file) when
    its outputs hold a leaf that is neither a tensor nor plain data, or would not read back
    alike."""
    try:
        stored = to_stored(outputs)
        torch.save(_probe_data(batch, stored), path)
        back = torch.load(path, map_location="cpu", weights_only=True)
        if back["outputs"]["structure"] == stored["structure"]:
            return True
    except Exception:  # outputs torch.load would not read back safely: no probe, no entry
        pass
    path.unlink(missing_ok=True)
    return False


def _probe_data(batch: Batch, stored: dict[str, Any]) -> dict[str, Any]:
    """What a probe file holds: the call's inputs (on the CPU), its batch size, its
    structure's tree when it has one, and its ``stored`` outputs."""
    return {
        "args": list(_cpu(batch.args)),
        "kwargs": dict(_cpu(dict(batch.kwargs))),
        "size": batch.size,
        "outputs": stored,
    } | ({} if batch.tree is None else {"tree": tree_to_json(batch.tree)})


def outputs_differ(got: Any, want: Mapping[str, Any]) -> str | None:
    """Why ``got`` is not the stored outputs ``want`` (leaves and structure,
    :func:`~aitune_fp.effects.inputs.containers.to_stored`) within the probe's tolerance
    (``None``: it is)."""
    got_leaves, got_spec = flatten(got)
    want_leaves = list(want["leaves"])
    if describe(got_spec) != want["structure"]:
        return "its outputs have another structure"
    for i, (g, w) in enumerate(zip(got_leaves, want_leaves, strict=True)):
        problem = _leaf_differs(i, g, w)
        if problem is not None:
            return problem
    return None


def _leaf_differs(i: int, g: Any, w: Any) -> str | None:
    """Why output leaf ``i`` is not the probe's (``None``: it is, within tolerance)."""
    if not isinstance(w, torch.Tensor):
        return None if g == w else f"output {i} is {g!r}, the entry's model gave {w!r}"
    if not isinstance(g, torch.Tensor) or g.dtype != w.dtype or g.shape != w.shape:
        return f"output {i} has another dtype or shape"
    g = g.detach().to("cpu")
    if not (g.is_floating_point() or g.is_complex()):
        return None if torch.equal(g, w) else f"output {i} differs"
    scale = max(1.0, float(w.abs().max())) if w.numel() else 1.0
    if torch.allclose(g, w, rtol=PROBE_RTOL, atol=PROBE_ATOL * scale, equal_nan=True):
        return None
    worst = float((g.double() - w.double()).abs().max())
    return f"output {i} differs by up to {worst:.3g}"


def probe_problem(path: Path, module: torch.nn.Module, device: torch.device) -> str | None:
    """Why the entry whose probe is ``path`` was not built for ``module`` (``None``: it was)."""
    try:
        batch, want = _read_probe(path)
    except Exception as error:
        return f"its behaviour probe cannot be read ({type(error).__name__})"
    try:
        with torch.inference_mode():
            got = batch.to(device).call(module)
    except Exception as error:
        return f"the module fails on the entry's probe inputs ({type(error).__name__}: {error})"
    problem = outputs_differ(got, want)
    if problem is None:
        return None
    return f"it was built for a model that computes something else ({problem})"


def _read_probe(path: Path) -> tuple[Batch, dict[str, Any]]:
    """The probe's inputs as a batch and its stored outputs (leaves and structure); raises
    when the file cannot be read as one."""
    data = torch.load(path, map_location="cpu", weights_only=True)
    tree = tree_from_json(data["tree"]) if "tree" in data else None
    batch = Batch(tuple(data["args"]), dict(data["kwargs"]), int(data["size"]), tree)
    stored = data["outputs"]
    return batch, {"leaves": list(stored["leaves"]), "structure": stored["structure"]}
