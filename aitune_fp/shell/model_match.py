"""A saved tuned module and the module handed to ``load``: the same model, or refused.

Rules:
- ``save`` keeps, with a module it knows the source of, the source's :func:`~aitune_fp.
  effects.cache_key.model_digest` (weights, structure and behaviour: attributes, configs,
  helper functions, globals, hooks) and a behaviour probe (``probe.pt``: one eager call at
  batch size 1 on the tuning samples, :mod:`aitune_fp.effects.cache.probe`), a listed and
  sealed file of the folder;
- ``load(path, module=...)`` refuses (:class:`~aitune_fp.shell.sealed.LoadError`) a module
  whose digest differs from the saved one, or that gives other outputs on the probe's
  inputs: the loaded module would run one model's artifact and fall back to another's
  eager outside its envelope. Saves written before digests were kept are checked by
  their weights digest alone;
- without ``module=`` nothing is checked here: an artifact runs as saved.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import torch

from aitune_fp.effects.cache.integrity import FileDigest, digest
from aitune_fp.effects.cache.key import model_digest, weights_digest
from aitune_fp.effects.cache.probe import PROBE_FILE, probe_problem, write_probe
from aitune_fp.effects.inputs.samples import Samples, make_batch

__all__ = ["PROBE_FILE", "mismatch", "model_fields", "write_model_probe"]
MODEL_FIELD: Final = "model_sha256"


def model_fields(source: torch.nn.Module | None) -> dict[str, str | None]:
    """The manifest's fields naming the source module (``None`` values when unknown).

    >>> model_fields(None)
    {'weights_sha256': None, 'model_sha256': None}
    >>> fields = model_fields(torch.nn.Linear(2, 2))
    >>> sorted(fields), all(isinstance(v, str) for v in fields.values())
    (['model_sha256', 'weights_sha256'], True)
    """
    if source is None:
        return {"weights_sha256": None, MODEL_FIELD: None}
    try:
        return {"weights_sha256": weights_digest(source), MODEL_FIELD: model_digest(source)}
    except Exception:  # an exotic tensor type or state: nothing to pin it by
        return {"weights_sha256": None, MODEL_FIELD: None}


def write_model_probe(
    folder: Path, samples: Samples, source: torch.nn.Module | None
) -> FileDigest | None:
    """Write ``probe.pt`` of ``source`` into ``folder`` (its digest; ``None``: no probe).

    >>> import tempfile
    >>> from aitune_fp.effects.inputs.samples import normalise_samples
    >>> folder, samples = Path(tempfile.mkdtemp()), normalise_samples([torch.zeros(1, 2)])
    >>> write_model_probe(folder, samples, None) is None  # the source is unknown
    True
    >>> write_model_probe(folder, samples, torch.nn.Linear(3, 3)) is None  # it cannot run
    True
    >>> write_model_probe(folder, samples, torch.nn.Linear(2, 2)) == digest(folder / PROBE_FILE)
    True
    """
    if source is None:
        return None
    batch = make_batch(samples, 1)
    try:
        with torch.inference_mode():
            outputs = batch.call(source)
    except Exception:  # the source does not run here (another device): no probe to keep
        return None
    return digest(folder / PROBE_FILE) if write_probe(folder / PROBE_FILE, batch, outputs) else None


def mismatch(
    saved: dict[str, str | None],
    probe: Path | None,
    module: torch.nn.Module,
    device: torch.device,
) -> str | None:
    """Why ``module`` is not the model the save was tuned from (``None``: it is).

    ``saved`` holds the manifest's ``weights_sha256`` and ``model_sha256`` (either may be
    ``None``); ``probe`` is the verified private copy of the probe file, when the save has
    one.

    >>> import copy
    >>> tuned, cpu = torch.nn.Linear(2, 2), torch.device("cpu")
    >>> saved = model_fields(tuned)
    >>> mismatch(saved, None, copy.deepcopy(tuned), cpu) is None
    True
    >>> other = copy.deepcopy(tuned)
    >>> _ = other.bias.data.add_(1.0)
    >>> mismatch(saved, None, other, cpu)
    'its weights differ from those it was tuned with (weights sha256 mismatch)'
    >>> mismatch({"weights_sha256": None, "model_sha256": None}, None, other, cpu) is None
    True
    """
    weights = saved.get("weights_sha256")
    if weights is not None and weights_digest(module) != weights:
        return "its weights differ from those it was tuned with (weights sha256 mismatch)"
    model = saved.get(MODEL_FIELD)
    if model is not None and model_digest(module) != model:
        return (
            "its code, attributes, configuration or the functions it calls differ from the "
            "model it was tuned from (model sha256 mismatch)"
        )
    if probe is not None:
        return probe_problem(probe, module, device)
    return None
