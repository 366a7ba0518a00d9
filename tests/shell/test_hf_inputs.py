"""A causal LM's decode step tuned with its KV cache as an input (a ``DynamicCache``): the
compilers run it, the exporters record why they cannot (tiny config, random weights)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import torch
from returns.unsafe import unsafe_perform_io

from aitune_fp import ProfilingPlan
from aitune_fp.core.measure.stop_rules import fixed_steps
from aitune_fp.effects.inputs.samples import make_batch, normalise_samples
from aitune_fp.shell.tune_module import TuneOptions, run_tuning
from tests.tiny_hf import SHORT, tiny_llama

transformers = pytest.importorskip("transformers")
pytestmark = pytest.mark.heavy
PLAN = dataclasses.replace(
    SHORT, plan=ProfilingPlan(call_rule=fixed_steps(warmup=2, steps=4), max_batch_size=2)
)
BACKENDS = ["eager", "inductor", "onnxruntime", "aot_inductor"]


def _decode_step(module: torch.nn.Module) -> dict[str, Any]:
    """One decode step after a prefill of 5 tokens: the next token, the mask, the cache."""
    ids = torch.randint(0, 128, (2, 6), generator=torch.Generator().manual_seed(3))
    with torch.inference_mode():
        cache = module(input_ids=ids[:, :5], attention_mask=torch.ones(2, 5).long())["cache"]
    return {"input_ids": ids[:, 5:], "attention_mask": torch.ones(2, 6).long(), "cache": cache}


@pytest.fixture(scope="module")
def decode_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, dict[str, Any], Any]:
    """One tune of the decode step on eager, Inductor and two exporting backends."""
    module = tiny_llama()
    sample = _decode_step(module)
    folder = tmp_path_factory.mktemp("decode")
    run = run_tuning(module, [sample], PLAN, BACKENDS, TuneOptions(cache_dir=folder))
    return unsafe_perform_io(run).unwrap(), sample, module


def test_a_decode_step_with_a_kv_cache_tunes_on_eager_and_inductor(decode_run: Any) -> None:
    """Eager and Inductor validate and are profiled on calls carrying a ``DynamicCache``,
    and the selection is one of them."""
    run, _, _ = decode_run
    outcomes = {c.backend: c for c in run.record.candidates}
    assert outcomes["eager"].failure is None and outcomes["inductor"].failure is None
    assert outcomes["inductor"].profile is not None
    assert run.record.selection.backend in ("eager", "inductor")


def test_the_exporting_backends_fail_at_export_naming_the_cache(decode_run: Any) -> None:
    """ONNX Runtime and AOTInductor are recorded failures at ``export`` naming the input
    and its type, not a refused tune."""
    run, _, _ = decode_run
    failures = {c.backend: c.failure for c in run.record.candidates if c.failure is not None}
    assert set(failures) == {"onnxruntime", "aot_inductor"}
    for failure in failures.values():
        assert failure.stage == "export"
        assert failure.message.startswith("input 'cache' is a DynamicCache: ")


def test_the_tuned_decode_step_returns_a_grown_cache_and_leaves_the_users(
    decode_run: Any,
) -> None:
    """The tuned module takes the user's ``DynamicCache``, returns eager's logits and a
    cache one token longer, and the sample's cache was never grown by the tune."""
    run, sample, module = decode_run
    assert sample["cache"].get_seq_length() == 5
    with torch.inference_mode():
        want = module(**_decode_step(module))
        got = run.tuned(**_decode_step(module))
    assert type(got["cache"]).__name__ == "DynamicCache" and got["cache"].get_seq_length() == 6
    torch.testing.assert_close(got["logits"], want["logits"], rtol=1e-4, atol=1e-4)


def test_a_static_cache_input_gives_the_same_step_on_every_call() -> None:
    """A ``StaticCache`` decode step (whose length the model advances in place) is batched
    by its key and value tensors, and two calls of one batch give the same logits."""
    module = tiny_llama()
    ids = torch.randint(0, 128, (2, 6), generator=torch.Generator().manual_seed(4))
    cache = transformers.StaticCache(config=module.config, max_cache_len=16)
    with torch.inference_mode():
        module(input_ids=ids[:, :5], cache=cache, use_cache=True)
        samples = normalise_samples([{"input_ids": ids[:, 5:], "cache": cache}])
        batch = make_batch(samples, 3)
        first, second = batch.call(module), batch.call(module)
    assert type(first["cache"]).__name__ == "StaticCache"
    assert all(name.startswith(("input_ids", "cache[")) for name in samples.spec.names)
    assert torch.equal(first["logits"], second["logits"])
