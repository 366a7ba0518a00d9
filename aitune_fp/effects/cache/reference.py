"""Eager reference outputs kept with a cache entry, so a warm hit validates without eager.

Rules:
- the validation batches are :func:`validation_batches`: every user sample, each
  batch size checked (with dynamic axes, also at every dynamic dimension's minimum and
  maximum), and the seen and held-out parts the accuracy verdict reads
  (:func:`~aitune_fp.effects.checks.held_out.judged_batches`), each named by where it is
  (``"at batch size 4"``);
- :func:`samples_digest` is a sha256 over the samples' values (every tensor's name, dtype,
  shape and bytes, in call order), their spec and grouping: two sample sets with the same
  shapes but other numbers differ;
- a reference file holds that digest and the eager outputs of each named batch as leaves
  (on the CPU) and their structure's description
  (:func:`~aitune_fp.effects.inputs.containers.to_stored`), so ``ModelOutput`` and KV caches
  are kept as tensors and JSON text; it is written only when it reads back alike
  (``torch.load(weights_only=True)``), so a model whose outputs hold leaves that are
  neither tensors nor plain data simply has no reference; reading one rebuilds each output
  into the user's type (:func:`~aitune_fp.effects.inputs.containers.rebuild`);
- a reference is used (:func:`cached_references`) only when the runner came from the
  cache with one (``Built.info["cache_reference"]``), its samples digest equals the
  current samples', it reads back, and it holds every batch validation will check;
  anything else means ``None``: validation runs eager as it always did.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import torch

from aitune_fp.effects.backends.base import Built
from aitune_fp.effects.checks.held_out import judged_batches
from aitune_fp.effects.checks.tf32 import strict_fp32
from aitune_fp.effects.inputs.containers import rebuild, to_stored
from aitune_fp.effects.inputs.samples import Batch, Samples, batch_at, make_batch

log = logging.getLogger("aitune_fp")
REFERENCE_FILE: Final = "eager_reference.pt"
INFO_KEY: Final = "cache_reference"


def validation_batches(samples: Samples, batch_sizes: Sequence[int]) -> list[tuple[str, Batch]]:
    """The batches validation checks, each with the phrase naming it."""
    named = [(f"on sample {i}", b) for i, b in enumerate(samples.items)]
    spec = samples.spec
    for size in sorted(set(batch_sizes)):
        named.append((f"at batch size {size}", make_batch(samples, size)))
        for which in ("min", "max") if spec.dims() else ():
            sizes = spec.sizes(which)
            text = ", ".join(f"{k}={v}" for k, v in sizes.items())
            named.append((f"at batch size {size} with {text}", batch_at(samples, size, sizes)))
    _, seen, held = judged_batches(samples)
    known = {where for where, _ in named}
    return [*named, *((where, b) for where, b in (*seen, *held) if where not in known)]


def hash_tensor(h: Any, name: str, t: torch.Tensor) -> None:
    """Feed ``h`` one named tensor: ``name|dtype|shape|`` then its bytes (on the CPU).

    >>> def hexed(name, t):
    ...     h = hashlib.sha256()
    ...     hash_tensor(h, name, t)
    ...     return h.hexdigest()
    >>> x = hexed("x", torch.zeros(2))
    >>> x == hexed("x", torch.zeros(2)), x == hexed("x", torch.zeros(2, dtype=torch.float64))
    (True, False)
    >>> x == hexed("y", torch.zeros(2)), x == hexed("x", torch.zeros(1, 2))
    (False, False)
    """
    t = t.detach()
    h.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
    flat = t.to("cpu").contiguous().reshape(-1)
    if flat.numel():
        h.update(flat.view(torch.uint8).numpy().tobytes())


def samples_digest(samples: Samples) -> str:
    """sha256 of the samples' values, spec and grouping.

    >>> from aitune_fp.effects.inputs.samples import normalise_samples
    >>> a = normalise_samples([torch.zeros(2, 3)])
    >>> b = normalise_samples([torch.ones(2, 3)])
    >>> samples_digest(a) == samples_digest(normalise_samples([torch.zeros(2, 3)]))
    True
    >>> samples_digest(a) == samples_digest(b)
    False
    """
    h = hashlib.sha256(f"{samples.spec!r}|{samples.groups}|{samples.batched}|".encode())
    for i, item in enumerate(samples.items):
        h.update(f"sample {i} size {item.size}|".encode())
        for j, arg in enumerate(item.args):
            hash_tensor(h, str(j), arg)
        for key in item.kwargs:
            hash_tensor(h, key, item.kwargs[key])
        if item.tree is not None:  # the constants a structured call keeps whole
            h.update(repr(item.tree.constants).encode())
    return h.hexdigest()


def eager_references(
    module: torch.nn.Module, samples: Samples, batch_sizes: Sequence[int], device: torch.device
) -> dict[str, Any]:
    """The eager outputs of every validation batch, on the CPU, by batch name (computed in
    strict float32, as validation computes them: :mod:`.tf32`)."""
    with torch.inference_mode(), strict_fp32():
        return {
            where: to_stored(batch.to(device).call(module))
            for where, batch in validation_batches(samples, batch_sizes)
        }


def _same_structure(a: Mapping[str, Any], b: Any) -> bool:
    if not isinstance(b, dict) or set(a) != set(b):
        return False
    return all(a[k]["structure"] == b[k]["structure"] for k in a)


def write_references(path: Path, digest: str, outputs: Mapping[str, Any]) -> bool:
    """Write a reference file (``outputs``: each batch's
    :func:`~aitune_fp.effects.inputs.containers.to_stored` form); ``False`` (and no file) when it
    would not read back alike."""
    torch.save({"samples": digest, "outputs": dict(outputs)}, path)
    try:
        back = torch.load(path, map_location="cpu", weights_only=True)
        if isinstance(back, dict) and _same_structure(outputs, back.get("outputs")):
            return True
    except Exception as error:  # an output type torch.load will not read back safely
        log.info("artifact cache: no eager reference kept (%s)", str(error).splitlines()[0])
    path.unlink(missing_ok=True)
    return False


def cached_references(
    built: Built, samples: Samples, batch_sizes: Sequence[int], device: torch.device
) -> dict[str, Any] | None:
    """The stored eager outputs for these samples' validation batches, or ``None``."""
    meta = built.info.get(INFO_KEY)
    if not isinstance(meta, dict) or not isinstance(meta.get("file"), str):
        return None
    digest = samples_digest(samples)
    if meta.get("samples") != digest:
        log.info("eager reference not used: it was computed from other samples")
        return None
    try:
        data = torch.load(Path(meta["file"]), map_location=device, weights_only=True)
        outputs = data["outputs"] if data.get("samples") == digest else None
    except Exception as error:
        log.warning("eager reference not used: unreadable (%s)", str(error).splitlines()[0])
        return None
    wanted = [where for where, _ in validation_batches(samples, batch_sizes)]
    if not isinstance(outputs, dict) or not all(w in outputs for w in wanted):
        log.info("eager reference not used: it does not hold every batch checked")
        return None
    try:
        return {w: rebuild(list(outputs[w]["leaves"]), outputs[w]["structure"]) for w in wanted}
    except (KeyError, TypeError, ValueError) as error:
        log.warning("eager reference not used: %s", str(error).splitlines()[0])
        return None
