"""Inputs that hold containers: tensor leaves batched by name, the user's types rebuilt."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch

from aitune_fp.effects.backends._structured import refused_containers
from aitune_fp.effects.backends.aot_inductor import AOTInductor
from aitune_fp.effects.backends.inductor import InductorJIT
from aitune_fp.effects.inputs.envelope import Envelope
from aitune_fp.effects.inputs.rows import split_samples
from aitune_fp.effects.inputs.samples import batch_at, make_batch, normalise_samples


@dataclass
class Pair:
    """A user's dataclass input: two tensors and a plain step."""

    a: torch.Tensor
    b: torch.Tensor
    step: int


class PairModel(torch.nn.Module):
    """A module taking a tensor, a dataclass and a scalar position."""

    def forward(self, x: torch.Tensor, pair: Pair, pos: torch.Tensor) -> dict[str, Any]:
        return {"y": x.sum(-1) + pair.a.sum(-1) * pair.step + pair.b.mean(-1) + pos}


def _sample(rows: int, width: int = 2, start: float = 0.0) -> dict[str, Any]:
    x = torch.arange(rows * width, dtype=torch.float32).reshape(rows, width) + start
    pair = Pair(x[:, :1] * 10, torch.ones(rows, 3), 7)
    return {"x": x, "pair": pair, "pos": torch.tensor(5.0)}


def test_a_dataclass_input_round_trips_with_its_leaves_named() -> None:
    """A dict sample holding a dataclass names each tensor leaf by its path, keeps the plain
    step and the scalar position whole, and every call rebuilds the user's dataclass."""
    s = normalise_samples([_sample(4)])
    assert s.spec.names == ("x", "pair.a", "pair.b") and s.rows == 4
    got = s.items[0].call(lambda **kw: kw)
    assert type(got["pair"]) is Pair and got["pair"].step == 7
    assert torch.equal(got["pair"].a, _sample(4)["pair"].a) and float(got["pos"]) == 5.0
    want = PairModel()(**_sample(4))["y"]
    assert torch.equal(s.items[0].call(PairModel())["y"], want)


def test_rows_are_sliced_along_the_batch_axis_of_every_leaf() -> None:
    """A batch built from row 1 on holds rows 1 and 2 of every leaf, and a sample cut into
    pieces keeps its rows in order; the whole leaves stay whole in each."""
    s = normalise_samples([_sample(4)])
    batch = make_batch(s, 2, offset=1).call(lambda **kw: kw)
    assert batch["x"].tolist() == [[2.0, 3.0], [4.0, 5.0]]
    assert batch["pair"].a.flatten().tolist() == [20.0, 40.0] and batch["pair"].step == 7
    pieces = split_samples(s, 3).items
    assert [p.size for p in pieces] == [3, 1]
    last = pieces[1].call(lambda **kw: kw)
    assert last["pair"].a.flatten().tolist() == [60.0] and float(last["pos"]) == 5.0


def test_a_leaf_that_differs_between_samples_is_a_dynamic_axis_by_its_name() -> None:
    """Two samples whose dataclass leaf differs in width make that leaf's axis dynamic, and
    batches resized there rebuild the dataclass at the asked width."""
    wide = _sample(2)
    wide["pair"] = Pair(torch.ones(2, 5), torch.ones(2, 3), 7)
    s = normalise_samples([_sample(2), wide])
    (axis,) = s.spec.tensors[1].dynamic
    assert s.spec.tensors[1].name == "pair.a" and (axis.min, axis.max) == (1, 5)
    got = batch_at(s, 3, {axis.dim: 4}).call(lambda **kw: kw)
    assert got["pair"].a.shape == (3, 4) and type(got["pair"]) is Pair


def test_samples_with_other_containers_are_refused() -> None:
    """A sample whose dataclass is a tuple elsewhere does not match the first sample."""
    other = _sample(2)
    other["pair"] = (other["pair"].a, other["pair"].b, 7)
    with pytest.raises(ValueError, match="containers have another structure"):
        normalise_samples([_sample(2), other])


def test_the_envelope_admits_a_structured_call_by_its_leaves() -> None:
    """The envelope admits a call of the tuned containers within the tuned shapes, and
    refuses one whose container is another type or whose leaf has another size."""
    env = Envelope.of(normalise_samples([_sample(2)]).spec, max_batch_size=4)
    assert env.admits((), _sample(3))
    other = {**_sample(3), "pair": {"a": torch.ones(3, 1)}}
    assert not env.admits((), other)
    assert env.reason((), other) == "the call's containers are not the tuned ones"
    assert not env.admits((), _sample(3, width=3))


def test_a_module_updating_its_container_in_place_sees_the_sample_every_call() -> None:
    """A module that appends to its input container's list changes nothing the next call
    sees: each call gets containers rebuilt from the sample's tensors."""

    def append(state: dict[str, list[torch.Tensor]]) -> int:
        state["kv"].append(state["kv"][-1] + 1)
        return len(state["kv"])

    batch = normalise_samples([{"state": {"kv": [torch.zeros(2, 1)]}}]).items[0]
    assert [batch.call(append) for _ in range(3)] == [2, 2, 2]


def test_backends_that_export_refuse_containers_and_compilers_take_them() -> None:
    """AOTInductor's failure is at export and names the input and its type; Inductor
    takes the same samples."""
    s = normalise_samples([_sample(2)])
    failure = refused_containers(AOTInductor(), s)
    assert failure is not None and failure.stage == "export"
    assert failure.message.startswith("input 'pair' is a Pair: aot_inductor exports")
    assert refused_containers(InductorJIT(), s) is None


def test_a_batch_rebuilds_its_dataclass_in_a_process_that_never_registered_it() -> None:
    """A pickled batch (as a worker receives it) rebuilds the user's dataclass in a fresh
    process, which registers the type with pytree on first use."""
    blob = pickle.dumps(make_batch(normalise_samples([_sample(2)]), 2))
    script = (
        "import pickle, sys\n"
        "batch = pickle.loads(sys.stdin.buffer.read())\n"
        "got = batch.call(lambda **kw: kw)\n"
        "print(type(got['pair']).__name__, got['pair'].step, tuple(got['pair'].b.shape))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], input=blob, capture_output=True, timeout=120, check=True
    )
    assert done.stdout.decode().split() == ["Pair", "7", "(2,", "3)"]


def test_a_saved_structured_spec_reads_back_and_rebuilds_zeros_in_the_users_types() -> None:
    """The input spec of a structured call survives its JSON round trip, and the all-zeros
    sample a recipe is rebuilt from holds the user's dataclass and the kept-whole position."""
    from aitune_fp.shell.spec_json import spec_from_json, spec_to_json, zero_samples

    spec = normalise_samples([_sample(2)]).spec
    back = spec_from_json(json.loads(json.dumps(spec_to_json(spec))))
    assert back == spec and back.tree is not None
    got = zero_samples(back).items[0].call(lambda **kw: kw)
    assert type(got["pair"]) is Pair and got["pair"].b.shape == (1, 3)
    assert float(got["pos"]) == 5.0 and float(got["x"].abs().sum()) == 0.0


def test_a_behaviour_probe_of_a_structured_call_rebuilds_its_containers(tmp_path: Path) -> None:
    """A probe written for a call holding a dataclass loads with ``weights_only`` and runs
    the module on the rebuilt dataclass: the same module passes, one that reads the
    dataclass differently is told apart."""
    from aitune_fp.effects.cache.probe import probe_problem, write_probe

    batch = make_batch(normalise_samples([_sample(2)]), 1, offset=1)
    path = tmp_path / "probe.pt"
    assert write_probe(path, batch, batch.call(PairModel()))
    assert probe_problem(path, PairModel(), torch.device("cpu")) is None
    assert "computes something else" in str(probe_problem(path, Doubled(), torch.device("cpu")))


class Doubled(PairModel):
    """The pair module with its step read twice (another model)."""

    def forward(self, x: torch.Tensor, pair: Pair, pos: torch.Tensor) -> dict[str, Any]:
        return {"y": super().forward(x, pair, pos)["y"] + pair.a.sum(-1) * pair.step}


def test_a_written_tree_reads_back_in_a_process_that_never_met_the_dataclass() -> None:
    """The JSON of a call tree holding a dataclass reads back in a fresh process that only
    imported the dataclass's top-level package, and rebuilds the dataclass."""
    from aitune_fp.effects.inputs.call_tree import tree_to_json

    doc = json.dumps(tree_to_json(normalise_samples([_sample(2)]).spec.tree))  # type: ignore[arg-type]
    script = (
        "import json, sys, torch, tests\n"
        "from aitune_fp.effects.inputs.call_tree import tree_from_json\n"
        "tree = tree_from_json(json.loads(sys.stdin.read()))\n"
        "t = {n: torch.ones(1, 3) for n in tree.tensor_names}\n"
        "print(type(tree.rebuild(t)[1]['pair']).__name__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], input=doc, capture_output=True, text=True, timeout=120
    )
    assert done.stdout.split() == ["Pair"], done.stderr[-500:]
