"""The ``/generate`` endpoint of a saved ``TunedGenerator``, free of any server.

Routes:
- ``GET /health``: 200 ``{"status": "ok", "pick": …}``;
- ``GET /info``: 200 with the pick, each phase's backend, the tune's reason, whether a
  tokenizer is loaded, and what was served so far;
- ``POST /generate``: a JSON request (:mod:`aitune_fp.core.serving.generate_request`)
  answered with ``{"tokens": [[new ids]…], "sequences": [[prompt + new]…], "text": […]
  (with a tokenizer), "timing": {"ttft_ms", "itl_ms", "total_ms", "new_tokens",
  "tokens_per_s"}, "pick": …}``.

Rules: a refused request (bad JSON, a bad field, an argument greedy decoding cannot honour)
is a 4xx with ``{"error": "<one line>"}``; a call that raises is a 500 with one line; either
way the endpoint keeps serving. Requests run one at a time (the pick's static cache is one
state) in a worker thread; the timing stamps each new token as the generator emits it (a
streamer, as ``generate`` feeds one), measured from the request's start.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any, Final

import torch

from aitune_fp.core.serving.generate_request import GenerateRequest, parse_generate, request_timing
from aitune_fp.core.serving.schema import PayloadError
from aitune_fp.effects.serving.codec import JSON, error_body
from aitune_fp.shell.serving.endpoint import Reply

ROUTES: Final = ("/generate", "/health", "/info")


class TokenClock:
    """A ``generate`` streamer that stamps when each step's new tokens exist."""

    def __init__(self) -> None:
        self.stamps: list[float] = []
        self._prompt_seen = False

    def put(self, value: torch.Tensor) -> None:
        """The prompt first (not stamped), then one call per step."""
        if self._prompt_seen:
            self.stamps.append(time.perf_counter())
        self._prompt_seen = True

    def end(self) -> None:
        """Generation ended (nothing to do)."""


def _accepted() -> frozenset[str]:
    from transformers import GenerationConfig

    defaults = GenerationConfig()  # type: ignore[no-untyped-call]
    return frozenset(k for k in vars(defaults) if not k.startswith("_"))


class GenerateEndpoint:
    """A generator, its tokenizer (or ``None``) and counters; :meth:`handle` answers."""

    def __init__(self, generator: Any, tokenizer: Any = None) -> None:
        self.generator, self.tokenizer = generator, tokenizer
        self.vocab = int(generator.model.config.vocab_size)
        self.accepted = _accepted()
        self.lock = threading.Lock()
        self.counts = {"requests": 0, "refused": 0, "failed": 0, "new_tokens": 0}

    def info(self) -> dict[str, Any]:
        """What ``GET /info`` returns (see the module rules)."""
        pick = self.generator.pick
        return {
            "pick": pick.name,
            "prefill": pick.prefill,
            "decode": pick.decode,
            "reason": self.generator.choice.reason,
            "tokenizer": self.tokenizer is not None,
            "served": dict(self.counts),
        }

    def _inputs(self, request: GenerateRequest) -> tuple[torch.Tensor, torch.Tensor | None]:
        if request.texts is not None:
            enc = self.tokenizer(
                list(request.texts), return_tensors="pt", padding=True, padding_side="left"
            )
            return enc["input_ids"], enc.get("attention_mask")
        ids = torch.tensor(request.input_ids, dtype=torch.long)
        mask = request.attention_mask
        return ids, None if mask is None else torch.tensor(mask, dtype=torch.long)

    def _check_length(self, prompt_len: int, options: Any) -> None:
        """A request longer than the model's positions is the request's fault (a static
        cache of that length is never allocated)."""
        limit = getattr(self.generator.model.config, "max_position_embeddings", None)
        new, total = options.get("max_new_tokens"), options.get("max_length")
        asked = prompt_len + new if isinstance(new, int) else total
        if isinstance(limit, int) and isinstance(asked, int) and asked > limit:
            raise ValueError(f"prompt + new tokens = {asked} exceeds the model's {limit} positions")

    def run(self, request: GenerateRequest) -> dict[str, Any]:
        """Generate for ``request`` (one at a time) and shape the JSON answer."""
        ids, mask = self._inputs(request)
        self._check_length(int(ids.shape[1]), request.options)
        clock = TokenClock()
        with self.lock:
            start = time.perf_counter()
            out = self.generator.generate(ids, mask, streamer=clock, **dict(request.options))
        sequences = out if isinstance(out, torch.Tensor) else out.sequences
        new = sequences[:, ids.shape[1] :]
        answer: dict[str, Any] = {
            "tokens": new.tolist(),
            "sequences": sequences.tolist(),
            "timing": request_timing(start, clock.stamps, int(ids.shape[0])),
            "pick": self.generator.pick.name,
        }
        if self.tokenizer is not None:
            answer["text"] = self.tokenizer.batch_decode(new, skip_special_tokens=True)
        self.counts["new_tokens"] += int(new.numel())
        return answer

    def _read(self, body: bytes) -> GenerateRequest | PayloadError:
        try:
            doc = json.loads(body)
        except ValueError as error:
            return PayloadError(400, f"the body is not JSON: {error}")
        return parse_generate(doc, self.accepted, self.vocab, self.tokenizer is not None)

    async def generate(self, body: bytes) -> Reply:
        """Answer ``POST /generate`` (see the module rules)."""
        self.counts["requests"] += 1
        request = self._read(body)
        if isinstance(request, PayloadError):
            self.counts["refused"] += 1
            return Reply(request.status, JSON, error_body(request.reason))
        try:
            answer = await asyncio.to_thread(self.run, request)
        except (TypeError, ValueError) as error:  # the arguments' fault (UnsupportedArgument…)
            self.counts["refused"] += 1
            return Reply(422, JSON, error_body(str(error)))
        except Exception as error:
            self.counts["failed"] += 1
            first = (str(error).strip().splitlines() or [""])[0]
            return Reply(500, JSON, error_body(f"generate raised {type(error).__name__}: {first}"))
        return Reply(200, JSON, json.dumps(answer).encode())

    async def handle(self, method: str, path: str, body: bytes) -> Reply:
        """The reply to one HTTP request."""
        route = path.rstrip("/") or "/"
        if route == "/health" and method == "GET":
            health = {"status": "ok", "pick": self.generator.pick.name}
            return Reply(200, JSON, json.dumps(health).encode())
        if route == "/info" and method == "GET":
            return Reply(200, JSON, json.dumps(self.info()).encode())
        if route == "/generate" and method == "POST":
            return await self.generate(body)
        if route in ROUTES:
            return Reply(405, JSON, error_body(f"{method} is not allowed on {route}"))
        routes = "use POST /generate, GET /health or GET /info"
        return Reply(404, JSON, error_body(f"no route {route}; {routes}"))
