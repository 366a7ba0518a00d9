"""Hugging Face structures tuned for real: a ``ModelOutput`` that is cached, a KV cache that
is validated tensor by tensor (tiny configs, random weights, no download)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from returns.unsafe import unsafe_perform_io

import aitune_fp
from aitune_fp import one_backend
from aitune_fp.effects.backends.base import Built
from aitune_fp.effects.backends.registry import backend_by_name
from aitune_fp.effects.checks.validate import validate
from aitune_fp.effects.inputs.samples import normalise_samples
from aitune_fp.shell.capture import capture
from aitune_fp.shell.tune_module import TuneOptions, run_tuning, tune_module
from tests.tiny_hf import SHORT, tiny_bert, tiny_llama

transformers = pytest.importorskip("transformers")
pytestmark = pytest.mark.heavy
CPU = torch.device("cpu")


def _tokens(vocab: int, mask: bool) -> list[dict[str, torch.Tensor]]:
    ids = torch.randint(0, vocab, (2, 12), generator=torch.Generator().manual_seed(1))
    return [{"input_ids": ids, **({"attention_mask": torch.ones_like(ids)} if mask else {})}]


EXPORTED = [
    "onnxruntime",
    backend_by_name("onnxruntime", precision="int8-dynamic"),
    "aot_inductor",
    "openvino",
]


def test_a_model_output_is_cached_and_a_re_tune_hits_for_every_exported_candidate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``BertModel`` returning a ``ModelOutput`` is stored in the artifact cache by every
    exported candidate (ONNX Runtime at fp32 and int8, AOTInductor, OpenVINO; in the sweep
    or in a build ahead of it), and a second
    tune with the same cache loads each (no export or conversion) and validates it on its
    stored eager reference, rebuilt into the ``ModelOutput``. (The second tune is ``fresh``:
    this is the artifact cache, not the decision cache; int8 is held to a 5 % bound here,
    as the default floors of hidden states refuse it, and a refused candidate is no hit;
    no race, whose widening builds a contender twice.)"""
    monkeypatch.setenv("AITUNE_FP_RACE", "0")
    module, samples = tiny_bert(), _tokens(200, mask=True)
    loose = aitune_fp.AccuracyPolicy(bounds={"int8": aitune_fp.ErrorBound(0.05)})
    runs = [
        unsafe_perform_io(
            run_tuning(
                module,
                samples,
                SHORT,
                EXPORTED,
                TuneOptions(cache_dir=tmp_path, accuracy=loose, fresh=fresh),
            )
        )
        .unwrap()
        .record
        for fresh in (False, True)
    ]
    first, second = (run.candidates for run in runs)
    assert len(first) == len(second) == len(EXPORTED)
    assert [c.failure for c in (*first, *second)] == [None] * (2 * len(EXPORTED))
    made = {"export", "convert"}
    ahead = [run.wall.seconds("prebuild") if run.wall else 0.0 for run in runs]
    # the first tune made each artifact: in its sweep, or ahead of it (two cores build ahead)
    assert ahead[0] > 0 or all(made & set(c.stage_seconds) for c in first), ahead
    assert ahead[1] == 0.0, "an unchanged re-tune built something ahead"
    assert not any(made & set(c.stage_seconds) for c in second)
    assert [c.validation["cached_reference"] for c in second] == [1.0] * len(EXPORTED)


@pytest.fixture(scope="module")
def llama_run(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One tune of a tiny causal LM's forward (logits and a ``DynamicCache``)."""
    folder = tmp_path_factory.mktemp("llama")
    effect = run_tuning(
        tiny_llama(),
        _tokens(128, mask=False),
        SHORT,
        ["eager", "inductor"],
        TuneOptions(cache_dir=folder),
    )
    return unsafe_perform_io(effect).unwrap()


def test_a_causal_lm_with_a_kv_cache_tunes_on_eager_and_inductor(llama_run: Any) -> None:
    """Eager and Inductor both pass validation and are profiled on a forward whose output
    holds a ``DynamicCache``; the tuned module returns the user's types."""
    assert [(c.backend, c.failure) for c in llama_run.record.candidates] == [
        ("eager", None),
        ("inductor", None),
    ]
    out = llama_run.tuned(**_tokens(128, mask=False)[0])
    assert type(out["cache"]).__name__ == "DynamicCache"


class _Shifted(torch.nn.Module):
    """The model, with one value tensor of its KV cache shifted (a wrong backend)."""

    def __init__(self, inner: torch.nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, **kwargs: Any) -> Any:
        out = self.inner(**kwargs)
        layer = out["cache"].layers[-1]
        layer.values = layer.values + 0.5
        return out


def test_validation_compares_the_cache_tensors() -> None:
    """A runner whose logits are right but whose last cache value tensor is off fails
    validation, naming that cache leaf."""
    module = tiny_llama()
    samples = normalise_samples(_tokens(128, mask=False))
    result = unsafe_perform_io(validate("shifted", Built(_Shifted(module)), module, samples, CPU))
    assert "output['cache']" in result.failure().message


def test_capture_accepts_calls_carrying_a_dynamic_cache() -> None:
    """Calls made with a ``DynamicCache`` argument are recorded with a copy of the cache,
    which later in-place updates of the pipeline's cache leave unchanged."""
    module = tiny_llama()
    ids = torch.randint(0, 128, (1, 6))
    with torch.inference_mode(), capture(module) as captured:
        first = module(input_ids=ids)
        module(input_ids=ids[:, -1:], cache=first["cache"])
    call = captured.samples[1]
    assert isinstance(call, dict) and type(call["cache"]).__name__ == "DynamicCache"
    assert call["cache"] is not first["cache"]
    assert call["cache"].layers[0].keys.shape[-2] == 6 < first["cache"].layers[0].keys.shape[-2]


def test_a_saved_lm_rebuilds_its_output_types_in_a_fresh_process(tmp_path: Path) -> None:
    """A causal LM tuned on ONNX Runtime, saved and loaded in a fresh process that imported
    only ``transformers``, returns a ``CausalLMOutputWithPast`` holding a ``DynamicCache``."""
    samples = _tokens(128, mask=False)
    effect = tune_module(
        tiny_llama(),
        samples,
        one_backend(SHORT, "onnxruntime"),
        ["onnxruntime"],
        cache_dir=tmp_path,
    )
    folder = aitune_fp.save(unsafe_perform_io(effect).unwrap(), tmp_path / "saved")
    torch.save(samples[0]["input_ids"], tmp_path / "ids.pt")
    script = (
        "import sys, torch, transformers, aitune_fp\n"
        "out = aitune_fp.load(sys.argv[1])(input_ids=torch.load(sys.argv[2]))\n"
        "print(type(out).__name__, type(out['cache']).__name__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(folder), str(tmp_path / "ids.pt")],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert done.stdout.split() == ["CausalLMOutputWithPast", "DynamicCache"]
