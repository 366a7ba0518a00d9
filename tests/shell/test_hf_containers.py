"""Containers are data (issue 32 §1): Hugging Face ``ModelOutput``s and caches are flattened
to tensors plus a plain-data description, for probes, the artifact cache, validation and
exports, and rebuilt as the user's types. Models are tiny configs with random weights."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from returns.unsafe import unsafe_perform_io

from aitune_fp.effects.artifacts import dump_output_spec, output_spec, read_output_spec
from aitune_fp.effects.backends.aot_inductor import AOTInductor
from aitune_fp.effects.backends.ort import OnnxRuntime
from aitune_fp.effects.cache import cached_build
from aitune_fp.effects.cache_probe import probe_problem, write_probe
from aitune_fp.effects.containers import flatten, structure_of
from aitune_fp.effects.inputs import make_batch, normalise_samples
from aitune_fp.effects.output_compare import check_structure

transformers = pytest.importorskip("transformers")
CPU = torch.device("cpu")


def bert() -> torch.nn.Module:
    """A one-layer BERT returning a ``ModelOutput`` (``return_dict`` on)."""
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=200, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=64,
    )  # fmt: skip
    return transformers.BertModel(config).eval()


def llama() -> torch.nn.Module:
    """A two-layer Llama-style causal LM whose forward returns logits and a DynamicCache."""
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
    )  # fmt: skip
    return transformers.LlamaForCausalLM(config).eval()


def _ids(vocab: int, rows: int = 2, length: int = 8) -> dict[str, torch.Tensor]:
    return {"input_ids": torch.randint(0, vocab, (rows, length), generator=torch.Generator())}


def test_a_cache_output_flattens_to_tensors_and_a_plain_description() -> None:
    """A causal LM's output (a ModelOutput holding a DynamicCache) flattens to tensors
    only, its structure is a string, equal for an equal structure and unequal for another
    depth; its spec survives JSON and reads back as the same structure."""
    model = llama()
    with torch.inference_mode():
        out = model(**_ids(128), use_cache=True)
        other = model(**_ids(128, length=5), use_cache=True)
    assert type(out.past_key_values).__name__ == "DynamicCache"
    leaves, spec = flatten(out)
    assert leaves and all(isinstance(t, torch.Tensor) for t in leaves)
    assert len(leaves) == 1 + 2 * 2  # logits, then keys and values of two layers
    assert isinstance(structure_of(spec), str)
    assert structure_of(flatten(other)[1]) == structure_of(spec)
    assert read_output_spec(dump_output_spec(output_spec(out))) == spec


def test_a_probe_of_cache_outputs_is_weights_only_and_judges_the_module(tmp_path: Path) -> None:
    """The behaviour probe of a model returning a cache is written (leaves plus structure,
    loadable with weights_only=True), passes for the same model and fails for another."""
    model = llama()
    samples = normalise_samples([_ids(128)])
    batch = make_batch(samples, 1)
    with torch.inference_mode():
        outputs = batch.call(model)
    path = tmp_path / "probe.pt"
    assert write_probe(path, batch, outputs)
    stored = torch.load(path, weights_only=True)
    assert all(isinstance(t, torch.Tensor) for t in stored["outputs"])
    assert probe_problem(path, model, CPU) is None
    changed = llama()
    with torch.no_grad():
        changed.lm_head.weight.add_(1.0)
    assert "computes something else" in (probe_problem(path, changed, CPU) or "")


def test_two_runs_caches_compare_leaf_by_leaf() -> None:
    """Validation compares two DynamicCache outputs by their tensors (eager used to fail
    comparing the objects)."""
    model = llama()
    x = _ids(128)
    with torch.inference_mode():
        a, b = model(**x, use_cache=True), model(**x, use_cache=True)
    labels = [label for label, _, _ in check_structure(a, b, "at batch 2")]
    assert len(labels) == 5 and any("cache" in label for label in labels)


@pytest.mark.heavy
@pytest.mark.parametrize("backend", [OnnxRuntime(), AOTInductor()], ids=["onnxruntime", "aoti"])
def test_a_model_output_model_is_cached_and_rebuilt_as_its_type(
    backend: Any, tmp_path: Path
) -> None:
    """BertModel (a ModelOutput) built twice with one cache: stored, then a hit, and the
    hit's runner returns the same ModelOutput type as eager with matching tensors."""
    model = bert()
    samples = normalise_samples([_ids(200)])

    def build() -> Any:
        return unsafe_perform_io(
            cached_build(backend, model, samples, CPU, tmp_path / "w", tmp_path / "c").unwrap()
        )

    first, second = build(), build()
    assert first.info["cache"] == "stored" and second.info["cache"] == "hit"
    x = _ids(200, rows=3)
    got, want = second.runner(**x), model(**x)
    assert type(got) is type(want)
    torch.testing.assert_close(got.last_hidden_state, want.last_hidden_state, rtol=1e-3, atol=1e-4)


@pytest.mark.heavy
def test_a_causal_lm_forward_tunes_on_eager_and_compiled_backends(tmp_path: Path) -> None:
    """A causal LM's forward (logits + DynamicCache) tunes: eager, Inductor and ONNX Runtime
    all validate (cache tensors compared too), and the pick returns a DynamicCache."""
    from aitune_fp import min_latency
    from aitune_fp.shell.io import perform
    from aitune_fp.shell.tune_module import run_tuning

    model = llama()
    run = perform(
        run_tuning(model, [_ids(128)], min_latency, ["eager", "inductor", "onnxruntime"],
                   cache_dir=tmp_path, max_batch_size=2, verify_seconds=0.3)
    ).unwrap()  # fmt: skip
    failed = {c.backend: c.failure for c in run.record.candidates if c.failure is not None}
    assert not failed, failed
    assert run.tuned is not None
    out = run.tuned(**_ids(128))
    assert type(out.past_key_values).__name__ == "DynamicCache"
    run.tuned.close()


def test_a_stored_cache_spec_reads_back_in_a_fresh_process(tmp_path: Path) -> None:
    """A fresh process that has not met a DynamicCache yet reads the stored spec back
    (its node types are imported and registered by name)."""
    model = llama()
    with torch.inference_mode():
        out = model(**_ids(128), use_cache=True)
    (tmp_path / "spec.json").write_text(dump_output_spec(output_spec(out)))
    code = (
        "import sys; from pathlib import Path;"
        "from aitune_fp.effects.artifacts import read_output_spec;"
        "spec = read_output_spec(Path(sys.argv[1]).read_text()); print(spec.num_leaves)"
    )
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "spec.json")],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "5"
