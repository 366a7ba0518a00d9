"""save/load keep the dynamic spec: the manifest's input spec round-trips its dynamic axes."""

from __future__ import annotations

import json

import pytest
import torch

from aitune_fp.effects.inputs.samples import normalise_samples
from aitune_fp.shell.persist import LoadError
from aitune_fp.shell.spec_json import spec_from_json, spec_to_json


def test_dynamic_axes_round_trip_through_the_manifest_spec() -> None:
    """An input spec with declared and inferred axes reads back equal from its JSON."""
    samples = [
        {"ids": torch.zeros(1, n, dtype=torch.int64), "mask": torch.ones(1, n)} for n in (8, 12)
    ]
    spec = normalise_samples(samples, dynamic_axes={"ids": {1: (4, 32)}}).spec
    text = json.dumps(spec_to_json(spec))
    assert spec_from_json(json.loads(text)) == spec


def test_manifests_without_dynamic_axes_still_load() -> None:
    """A spec written before dynamic axes existed reads back with none."""
    doc = spec_to_json(normalise_samples(torch.zeros(2, 3)).spec)
    del doc["dynamic"]
    assert spec_from_json(doc).tensors[0].dynamic == ()


def test_a_bad_dynamic_entry_is_a_load_error() -> None:
    """A dynamic axis naming no input is refused as a LoadError naming the spec."""
    doc = spec_to_json(normalise_samples(torch.zeros(2, 3)).spec)
    doc["dynamic"] = [
        {"input": "nope", "axis": 1, "min": 1, "max": 4, "opt": 2, "dim": "d", "inferred": True}
    ]
    with pytest.raises(LoadError, match="unknown input 'nope'"):
        spec_from_json(doc)
