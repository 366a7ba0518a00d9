"""What a server needs to know about a save folder, read without opening a runtime, and the
model a replica runs.

Rules:
- :func:`read_saved` reads ``manifest.json`` and, when present, ``run.json``: the backend,
  the input spec, the selection, the winner's measured latencies per batch size and the
  strategy; the serving plan comes from them (:mod:`aitune_fp.core.serving.plan`). A
  folder that is not a save is a :class:`~aitune_fp.shell.sealed.LoadError`;
- a replica opens the model with :func:`aitune_fp.load` (the sealed, verified copy), so the
  bytes it runs are the ones the manifest lists; ``eager=True`` serves the module the folder
  was tuned from instead (a control for measuring the tune as served): its weights must
  match the manifest's digest;
- a request names its tensors by the spec's names; for a spec whose calls hold containers
  (:mod:`aitune_fp.effects.inputs.call_tree`: ``cache[0]``, ``pair.a``), the replica's callable
  rebuilds the user's containers from them (:func:`by_leaves`), with the kept-whole
  constants of the first sample the tune saw.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import torch
import torch.utils._pytree as pytree

from aitune_fp.core.record.run_record import RunRecord, loads
from aitune_fp.core.records import Selection
from aitune_fp.core.report.lines import selected_line, speedup_line
from aitune_fp.core.serving.plan import ServingPlan, mean_latencies, plan_from_tune
from aitune_fp.core.strategies.registry import strategy_from_config
from aitune_fp.effects.cache.artifact_cache import weights_digest
from aitune_fp.effects.cache.artifacts import read_output_spec
from aitune_fp.effects.inputs.call_tree import CallTree
from aitune_fp.effects.inputs.samples import InputSpec
from aitune_fp.shell.persist import RECORD, load
from aitune_fp.shell.sealed import LoadError, _read_manifest
from aitune_fp.shell.spec_json import spec_from_json
from aitune_fp.shell.tuned_module import TunedModule


@dataclass(frozen=True, slots=True)
class Saved:
    """A save folder's facts for serving: backend kind, artifact, spec, plan, decision."""

    folder: str
    kind: str
    artifact: str | None
    device: str
    spec: InputSpec
    selection: Selection
    plan: ServingPlan
    decision: tuple[str, ...]
    tuned_max_batch_size: int | None
    weights_sha256: str | None
    outputs: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Served:
    """What a replica opens: the save folder, where to run it, and how."""

    folder: str
    device: str | None = None
    module: torch.nn.Module | None = None
    eager: bool = False
    expected_digest: str | None = None
    outside: str = "warn"


def _record(folder: Path) -> RunRecord | None:
    path = folder / RECORD
    if not path.is_file():
        return None
    try:
        return loads(path.read_text(encoding="utf-8"))
    except ValueError as error:
        raise LoadError(f"{path} cannot be read: {error}") from None


def _winner_latencies(record: RunRecord | None, backend: str) -> dict[int, float]:
    for outcome in () if record is None else record.outcomes:
        if outcome.backend == backend and outcome.profile is not None:
            return mean_latencies(outcome.profile.latencies_ms)
    return {}


def _decision(record: RunRecord | None, selection: Selection) -> tuple[str, ...]:
    if record is not None:
        try:
            strategy = strategy_from_config(record.strategy)
        except (ValueError, KeyError, TypeError):
            pass
        else:
            lines = (selected_line(strategy, selection), speedup_line(strategy, selection))
            return tuple(line for line in lines if line is not None)
    r = selection.result
    return (f"Selected {selection.backend} (batch size {r.selected_batch_size})",)


def _serving_plan(
    selection: Selection,
    record: RunRecord | None,
    max_batch_size: int | None,
    batch_wait_ms: float | None,
) -> ServingPlan:
    """How to serve the winner: from its tuned batch size and latencies, and the run's
    strategy when the record is kept."""
    result = selection.result
    return plan_from_tune(
        selection.backend,
        result.selected_batch_size,
        result.latency,
        strategy=None if record is None else dict(record.strategy),
        latencies_ms=_winner_latencies(record, selection.backend),
        max_batch_size=max_batch_size,
        batch_wait_ms=batch_wait_ms,
    )


def read_saved(
    folder: str | Path, *, max_batch_size: int | None = None, batch_wait_ms: float | None = None
) -> Saved:
    """The serving facts of the save at ``folder`` (see the module rules).

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "manifest.json").write_text('{"format": "aitune_fp.saved_module"}')
    >>> read_saved(folder)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    aitune_fp.shell.sealed.LoadError: ...manifest.json is not an aitune_fp save of version 1 \
(format 'aitune_fp.saved_module', version None)
    """
    path = Path(folder)
    doc = _read_manifest(path)
    selection, kind, device = doc.selection, doc.backend.kind, doc.device
    artifact, weights = doc.artifact, doc.weights_sha256
    try:
        spec = spec_from_json(dict(doc.input_spec), "manifest.json.input_spec")
        outputs = output_names(doc.outputs)
    except ValueError as error:
        raise LoadError(f"{path / 'manifest.json'}: {error}") from None
    record = _record(path)
    plan = _serving_plan(selection, record, max_batch_size, batch_wait_ms)
    facts = (kind, artifact, device, spec, selection, plan, _decision(record, selection))
    tuned_max = None if record is None else record.max_batch_size
    return Saved(str(path), *facts, tuned_max, weights, outputs)


def output_names(text: str) -> tuple[str, ...]:
    """``output_N: <where in the module's output>`` per output leaf, from the manifest's
    output structure (``output_0: ['logits']`` for a dict output).

    >>> from aitune_fp.effects.cache.artifacts import dump_output_spec, output_spec
    >>> output_names(dump_output_spec(output_spec(torch.zeros(1))))
    ('output_0: (the output)',)
    >>> out = {"logits": torch.zeros(1), "aux": (torch.zeros(1), torch.zeros(1))}
    >>> output_names(dump_output_spec(output_spec(out)))
    ("output_0: ['logits']", "output_1: ['aux'][0]", "output_2: ['aux'][1]")
    """
    spec = read_output_spec(text)
    leaves = pytree.tree_unflatten(list(range(spec.num_leaves)), spec)
    paths = pytree.tree_flatten_with_path(leaves)[0]
    return tuple(f"output_{i}: {pytree.keystr(path) or '(the output)'}" for path, i in paths)


def open_served(served: Served, saved: Saved) -> tuple[Any, TunedModule | None]:
    """The callable a replica runs and the tuned module behind it (``None`` for eager)."""
    if not served.eager:
        tuned = load(
            served.folder,
            served.module,
            device=served.device,
            expected_digest=served.expected_digest,
        )
        tuned.outside = served.outside
        return by_leaves(saved.spec, tuned), tuned
    module = served.module
    if module is None:
        raise LoadError("serving eager needs the module the folder was tuned from (module=...)")
    if saved.weights_sha256 is not None and weights_digest(module) != saved.weights_sha256:
        raise LoadError(f"the module's weights differ from those {served.folder} was tuned with")
    device = torch.device(served.device or saved.device)
    return by_leaves(saved.spec, module.eval().to(device)), None


def by_leaves(spec: InputSpec, model: Any) -> Any:
    """``model`` called with a request's tensors by name: as is, or, for a spec whose calls
    hold containers, with the user's containers rebuilt from the tensor leaves (the codec
    decodes a request by the spec's leaf names)."""
    if spec.tree is None:
        return model
    return partial(_rebuilt, spec.tree, model)


def _rebuilt(tree: CallTree, model: Any, *args: Any, **kwargs: Any) -> Any:
    return tree.call(model, kwargs)
