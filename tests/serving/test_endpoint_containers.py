"""Serving a module whose input holds a dataclass: a request names the tensor leaves, the
replica rebuilds the dataclass, and merged requests split back exactly."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import torch

import aitune_fp
from aitune_fp.core.record.run_record import RunRecord
from aitune_fp.core.records import BackendProfilingResult, Selection
from aitune_fp.effects.backends.base import Built
from aitune_fp.effects.backends.eager import TorchEager
from aitune_fp.effects.inputs.samples import normalise_samples
from aitune_fp.effects.serving.batching import Request
from aitune_fp.shell.serving.endpoint import Endpoint
from aitune_fp.shell.serving.saved import Served, read_saved
from aitune_fp.shell.tuned_module import TunedModule
from tests.effects.test_inputs_containers import Pair, PairModel, _sample


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory: pytest.TempPathFactory) -> Endpoint:
    """The eager pick of ``PairModel`` saved once and opened as a replica."""
    module = PairModel()
    samples = normalise_samples([_sample(2)])
    result = BackendProfilingResult(2000.0, 4, 2.0, 2000.0)
    selection = Selection("eager", result, False)
    strategy = {"strategy": "max_throughput", "parameters": {}}
    record = RunRecord("pair", "cpu", strategy, None, (), selection, None, {}, {}, 4)
    tuned = TunedModule(Built(module), TorchEager(), selection, samples, record, module)
    folder = aitune_fp.save(tuned, tmp_path_factory.mktemp("pair") / "saved")
    return Endpoint(Served(str(folder), module=module), read_saved(Path(folder)))


def _want(x: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return PairModel()(x, Pair(a, b, 7), torch.tensor(5.0))["y"]


def test_a_request_by_leaf_names_gets_the_modules_outputs(endpoint: Endpoint) -> None:
    """A JSON request naming ``x``, ``pair.a`` and ``pair.b`` is answered with what the
    module gives on the rebuilt dataclass (its step and position from the tune's sample)."""
    x, a, b = torch.randn(3, 2), torch.randn(3, 1), torch.randn(3, 3)
    body = {"inputs": {"x": x.tolist(), "pair.a": a.tolist(), "pair.b": b.tolist()}}
    reply = asyncio.run(
        endpoint.handle(
            "POST", "/predict", "application/json", json.dumps(body).encode(), endpoint.infer_alone
        )
    )
    assert reply.status == 200, reply.body
    got = torch.tensor(json.loads(reply.body)["outputs"]["output_0"])
    torch.testing.assert_close(got, _want(x, a, b))


def test_merged_requests_of_leaves_split_back_exactly(endpoint: Endpoint) -> None:
    """Two requests of 2 and 1 rows run as one batch of 3 and each gets its own rows."""
    parts = [(torch.randn(n, 2), torch.randn(n, 1), torch.randn(n, 3)) for n in (2, 1)]
    requests = [Request((), {"x": x, "pair.a": a, "pair.b": b}, len(x)) for x, a, b in parts]
    assert all(endpoint._batched(r) for r in requests)
    results, sizes = endpoint.run_batch(requests)
    assert sizes == [3]
    for got, (x, a, b) in zip(results, parts, strict=True):
        torch.testing.assert_close(got["y"], _want(x, a, b))
