"""config.pbtxt text parses with Triton's own model-config schema and carries the tune."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aitune_fp.core.serving.plan import plan_from_tune
from aitune_fp.core.serving.schema import TensorSig
from aitune_fp.core.serving.triton import TRITON_TYPES, NotExportable, TritonModel, config_pbtxt
from aitune_fp.shell.serving.triton_export import parse_config

pytest.importorskip("tritonclient.grpc.model_config_pb2")

dims = st.lists(st.sampled_from([-1, 1, 3, 16]), min_size=0, max_size=3)


@given(
    st.sampled_from(sorted(TRITON_TYPES)),
    dims,
    dims,
    st.sampled_from([1, 2, 8, 64]),
    st.floats(min_value=0.1, max_value=80.0),
    st.lists(st.integers(0, 3), max_size=2, unique=True),
)
def test_generated_configs_parse_with_tritons_schema_and_keep_the_values(
    dtype: str, in_dims: list[int], out_dims: list[int], batch: int, latency: float, gpus: list[int]
) -> None:
    """Any generated config parses as Triton's ModelConfig with the tuned max batch,
    preferred batch sizes, queue delay, dims (batch axis left out) and instance kind."""
    plan = plan_from_tune("onnxruntime", batch, latency)
    model = TritonModel(
        "m",
        "onnxruntime_onnx",
        "model.onnx",
        (TensorSig("input_0", dtype, (-1, *in_dims)),),
        (TensorSig("output_0", "float32", (-1, *out_dims)),),
        plan,
        tuple(gpus),
        2,
    )
    config = parse_config(config_pbtxt(model))
    assert config.max_batch_size == batch and config.platform == "onnxruntime_onnx"
    assert list(config.dynamic_batching.preferred_batch_size) == [batch]
    assert config.dynamic_batching.max_queue_delay_microseconds == plan.batch_wait_us
    assert list(config.input[0].dims) == (in_dims or [1])
    assert list(config.output[0].dims) == (out_dims or [1])
    group = config.instance_group[0]
    assert group.count == 2 and list(group.gpus) == gpus
    assert group.kind == (group.KIND_GPU if gpus else group.KIND_CPU)


def test_a_batch_axis_that_is_not_first_is_not_exportable() -> None:
    """Triton batches along the first axis: another batch axis is refused in one line."""
    model = TritonModel(
        "m",
        "onnxruntime_onnx",
        "model.onnx",
        (TensorSig("input_0", "float32", (3, -1)),),
        (TensorSig("output_0", "float32", (-1, 2)),),
        plan_from_tune("onnxruntime", 4, 1.0),
    )
    with pytest.raises(NotExportable, match=r"^not exportable to Triton: input_0 has shape"):
        config_pbtxt(model)
