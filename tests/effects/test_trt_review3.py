"""TensorRT's process-wide logger and the precision an engine is judged at (issue 37 §9,
§12), checked on CPU against the fakes of ``test_trt_precision`` (TensorRT 10.16 / 11.4
Python bindings).

Sources: TensorRT keeps a single logger pointer per process — its own warning, quoted in
NVIDIA/TensorRT#1475: "TensorRT maintains only a single logger pointer at any given time,
so the existing value, which can be retrieved with getLogger(), will be used instead. In
order to use a new logger, first destroy all existing builder, runner or refitter
objects." The fake builder below does exactly that. The engine inspector's JSON lists a
fused Myelin layer as ``{ForeignNode[...]}`` with the data types of its boundary tensors,
which can be float32 around a half-precision interior.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from torch import nn

from aitune_fp.effects.backends._build_guard import BuildLog
from aitune_fp.effects.backends._precision import trt_precision_plan
from aitune_fp.effects.backends.trt import TensorRT, precision_facts
from aitune_fp.effects.inputs.samples import Samples
from tests.effects.test_trt_precision import FAKES, _graph


def _single_pointer(trt: Any) -> list[Any]:
    """Make the fake's ``Builder`` keep TensorRT's single logger pointer: the first logger
    given while a builder lives is the one every later builder logs to; each build logs
    one error naming its builder. Returns the builders, kept alive as a tune keeps them."""
    live: list[Any] = []
    make = trt.Builder

    def builder(logger: Any) -> Any:
        made = make(logger if not live else live[0].logger)
        made.logger = logger if not live else live[0].logger
        serialize = made.build_serialized_network

        def build(network: Any, config: Any) -> bytes:
            made.logger.log(trt.ILogger.Severity.ERROR, f"error of builder {len(live)}")
            return serialize(network, config)  # type: ignore[no-any-return]

        made.build_serialized_network = build
        live.append(made)
        return made

    trt.Builder = builder
    return live


@pytest.mark.parametrize("generation", sorted(FAKES))
def test_each_builds_tensorrt_errors_land_in_its_own_log(
    generation: str, mlp: nn.Module, mlp_samples: Samples, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """Two engine builds in one process, the first builder still alive: each build's
    error is in its own build log, none in the other's (one process logger forwarding to
    the build under way)."""
    trt = FAKES[generation]()
    monkeypatch.setitem(sys.modules, "tensorrt", trt)
    live = _single_pointer(trt)
    plan = trt_precision_plan(trt, fp16=False, tf32=False)
    first, second = BuildLog(), BuildLog()
    backend = TensorRT(max_batch_size=8)
    backend._engine(_graph(tmp_path, mlp), mlp_samples.spec, first, plan)
    backend._engine(_graph(tmp_path, mlp), mlp_samples.spec, second, plan)
    assert len(live) == 2
    assert "error of builder 1" in first.text() and "builder 2" not in first.text()
    assert "error of builder 2" in second.text() and "builder 1" not in second.text()


def test_a_flag_built_half_engine_read_back_as_float32_is_judged_at_its_request() -> None:
    """On TensorRT 10's builder-flag path, an fp16 (bf16) engine whose inspector reads
    float32 (a fused ForeignNode's float32 boundary) is judged at float16 (bfloat16), the
    read-back kept beside it; on the strongly typed path the read-back is the precision."""
    for fp16, bf16, want in ((True, False, "float16"), (False, True, "bfloat16")):
        plan = trt_precision_plan(FAKES["10.16"](), fp16=fp16, tf32=False, bf16=bf16)
        assert plan.mechanism == "builder_flag"
        facts = precision_facts(plan, "float32", "engine_layers")
        assert facts["precision"] == want and facts["precision_read_back"] == "float32"
    typed = trt_precision_plan(FAKES["11.4"](), fp16=True, tf32=False)
    assert precision_facts(typed, "float16", "engine_layers")["precision"] == "float16"
    plain = trt_precision_plan(FAKES["11.4"](), fp16=False, tf32=False)
    assert precision_facts(plain, None, "")["precision"] == "float32"
