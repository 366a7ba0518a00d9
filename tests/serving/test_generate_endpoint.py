"""The /generate endpoint without a server: token ids or text in, the generator's tokens and
per-request timing out; bad requests are 4xx with one line and it keeps serving."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import torch

transformers = pytest.importorskip("transformers")

from aitune_fp.shell.serving.endpoint import Reply  # noqa: E402
from aitune_fp.shell.serving.generate_endpoint import GenerateEndpoint  # noqa: E402
from tests import tiny_hf  # noqa: E402
from tests.tiny_generator import picked  # noqa: E402
from tests.tiny_tokenizer import tiny_tokenizer  # noqa: E402


@pytest.fixture(scope="module")
def model() -> Any:
    """The shared tiny Llama, vocabulary 256."""
    return tiny_hf.tiny_llama(vocab=256)


@pytest.fixture(scope="module")
def endpoint(model: Any) -> GenerateEndpoint:
    """The endpoint over the fp32 static-cache pick, with the tiny tokenizer."""
    return GenerateEndpoint(picked(model), tiny_tokenizer())


def _post(endpoint: GenerateEndpoint, doc: Any, path: str = "/generate") -> tuple[int, Any]:
    body = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
    reply: Reply = asyncio.run(endpoint.handle("POST", path, body))
    return reply.status, json.loads(reply.body)


def test_token_ids_get_model_generates_tokens_and_timing(
    endpoint: GenerateEndpoint, model: Any
) -> None:
    """input_ids rows get model.generate's greedy new tokens, and the timing has TTFT,
    inter-token latency and tokens/s consistent with one another."""
    ids = torch.randint(3, 256, (2, 6))
    status, doc = _post(endpoint, {"input_ids": ids.tolist(), "max_new_tokens": 5})
    want = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=5)
    assert status == 200, doc
    assert doc["tokens"] == want[:, 6:].tolist() and doc["sequences"] == want.tolist()
    timing = doc["timing"]
    assert timing["new_tokens"] == 5 and 0 < timing["ttft_ms"] <= timing["total_ms"]
    assert timing["itl_ms"] > 0 and timing["tokens_per_s"] > 0
    assert doc["pick"] == "eager_static" and "text" in doc


def test_text_is_tokenized_left_padded_and_decoded(endpoint: GenerateEndpoint, model: Any) -> None:
    """A list of texts is one left-padded batch; the answer decodes each row's new tokens."""
    tok = tiny_tokenizer()
    texts = ["w5 w9 w77", "w8"]
    enc = tok(texts, return_tensors="pt", padding=True)
    want = model.generate(**enc, max_new_tokens=4, do_sample=False)[:, 3:]
    status, doc = _post(endpoint, {"text": texts, "max_new_tokens": 4, "do_sample": False})
    assert status == 200, doc
    assert doc["tokens"] == want.tolist()
    assert doc["text"] == tok.batch_decode(want, skip_special_tokens=True)


@pytest.mark.parametrize(
    ("doc", "status", "says"),
    [
        (b"{oops", 400, "not JSON"),
        ({"max_new_tokens": 3}, 422, "exactly one of input_ids and text"),
        ({"input_ids": [[1, 2], [3]]}, 422, "equally long"),
        ({"input_ids": [1, 999]}, 422, "outside the vocabulary"),
        ({"input_ids": [1, 2], "attention_mask": [1]}, 422, "input_ids' shape"),
        ({"input_ids": [1, 2], "temperatur": 0.5}, 422, "unknown field 'temperatur'"),
        ({"input_ids": [1, 2], "do_sample": True}, 422, "do_sample=True"),
        ({"input_ids": [1, 2], "num_beams": 3}, 422, "num_beams=3"),
        ({"input_ids": [1, 2], "max_new_tokens": 10**9}, 422, "exceeds the model's 64 positions"),
    ],
)
def test_bad_requests_are_4xx_and_it_keeps_serving(
    endpoint: GenerateEndpoint, doc: Any, status: int, says: str
) -> None:
    """Each bad request is refused with one line saying why; a good request still works."""
    got, reply = _post(endpoint, doc)
    assert got == status and says in reply["error"], reply
    assert _post(endpoint, {"input_ids": [4, 5], "max_new_tokens": 2})[0] == 200


def test_text_without_a_tokenizer_is_refused(model: Any) -> None:
    """A server without a tokenizer refuses text and says to send input_ids."""
    status, reply = _post(GenerateEndpoint(picked(model)), {"text": "w5"})
    assert status == 422 and "send input_ids" in reply["error"]


def test_health_info_and_unknown_routes(endpoint: GenerateEndpoint) -> None:
    """GET /health and /info name the pick; a wrong method is 405, an unknown route 404."""
    for path in ("/health", "/info"):
        reply = asyncio.run(endpoint.handle("GET", path, b""))
        assert reply.status == 200 and json.loads(reply.body)["pick"] == "eager_static"
    info = json.loads(asyncio.run(endpoint.handle("GET", "/info", b"")).body)
    assert info["tokenizer"] is True and info["served"]["requests"] >= 0
    assert asyncio.run(endpoint.handle("GET", "/generate", b"")).status == 405
    assert asyncio.run(endpoint.handle("POST", "/predict", b"")).status == 404


def test_a_model_output_answer_is_unpacked_not_refused(endpoint: GenerateEndpoint) -> None:
    """return_dict_in_generate makes generate return a ModelOutput; the endpoint answers
    with its sequences like any other request."""
    plain = _post(endpoint, {"input_ids": [7, 8, 9], "max_new_tokens": 3})
    as_output = _post(
        endpoint, {"input_ids": [7, 8, 9], "max_new_tokens": 3, "return_dict_in_generate": True}
    )
    assert as_output[0] == 200 and as_output[1]["tokens"] == plain[1]["tokens"]
