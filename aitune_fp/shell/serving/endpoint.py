"""The HTTP endpoint's logic, free of any server: routes, payload checks, the envelope rule.

Routes:
- ``GET /health``: 200 ``{"status": "ok", "backend": …}`` once the model is loaded;
- ``GET /info``: 200 with the backend, the serving plan (batch size, maximum batch, batch
  wait and its rule), the envelope (inputs, dims, dynamic ranges, what happens outside),
  the decision lines of the tune, and what was served so far (requests, batches, mean
  batch in rows);
- ``POST /predict`` (and ``POST /``): a payload in a documented format
  (:mod:`aitune_fp.effects.serving.codec`), answered with the outputs.

Rules:
- a refused payload is a 4xx with ``{"error": "<one line>"}`` and never reaches the model;
  a call that raises is a 500 with one line; either way the endpoint keeps serving;
- a request inside the tuned envelope with at most the plan's maximum batch rows goes to
  the dynamic batcher (``infer``); any other request is run alone by the tuned module, which
  applies the envelope rule (the eager module, when the module was given, else a refusal:
  422 with the envelope's reason).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import torch

from aitune_fp.core.serving.schema import PayloadError
from aitune_fp.effects.serving.batching import Request, run_batches
from aitune_fp.effects.serving.codec import (
    JSON,
    as_call,
    decode,
    encode,
    error_body,
    input_sigs,
    media_type,
)
from aitune_fp.shell.serving.saved import Saved, Served, open_served
from aitune_fp.shell.tuned_module import OutsideEnvelopeError

PREDICT: Final = ("/predict", "/")
Infer = Callable[[Request], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class Reply:
    """An HTTP response: status, content type and body."""

    status: int
    content_type: str
    body: bytes


def _json(status: int, doc: Any) -> Reply:
    return Reply(status, JSON, json.dumps(doc).encode())


def _refused(status: int, reason: str) -> Reply:
    return Reply(status, JSON, error_body(reason))


class Endpoint:
    """One replica's model and counters; :meth:`handle` answers one HTTP request."""

    def __init__(self, served: Served, saved: Saved) -> None:
        self.saved = saved
        self.plan = saved.plan
        self.model, self.tuned = open_served(served, saved)
        self.device = torch.device(served.device or saved.device)
        self.sigs = input_sigs(saved.spec)
        self.eager = served.eager
        self.counts = {"requests": 0, "refused": 0, "failed": 0, "batched_requests": 0}
        self.counts |= {"batches": 0, "batch_rows": 0, "alone": 0}

    # ------------------------------------------------------------------ model calls
    def run_batch(self, requests: Sequence[Request]) -> tuple[list[Any], list[int]]:
        """Each request's outputs (or its exception) and the rows of each batch run."""
        return run_batches(
            self.model, requests, self.saved.spec.batch_axis, self.plan.max_batch_size
        )

    def counted(self, requests: int, sizes: Sequence[int]) -> None:
        """Count a batched call: its requests and each model call's rows."""
        self.counts["batched_requests"] += requests
        self.counts["batches"] += len(sizes)
        self.counts["batch_rows"] += sum(sizes)

    def _run_alone(self, request: Request) -> Any:
        with torch.inference_mode():
            return self.model(*request.args, **request.kwargs)

    def _batched(self, request: Request) -> bool:
        if request.rows > self.plan.max_batch_size:
            return False
        envelope = None if self.tuned is None else self.tuned.envelope
        tree = self.saved.spec.tree  # a structured call is judged in the user's containers
        args, kwargs = (
            (request.args, request.kwargs) if tree is None else tree.rebuild(request.kwargs)
        )
        return envelope is None or envelope.admits(args, dict(kwargs))

    # ------------------------------------------------------------------ routes
    def _served_counts(self) -> dict[str, float | None]:
        """The counters, with the mean rows and requests per batch (``None``: no batch yet)."""
        counts, batches = dict[str, float | None](self.counts), self.counts["batches"]
        counts["mean_batch_rows"] = self.counts["batch_rows"] / batches if batches else None
        counts["mean_batch_requests"] = (
            self.counts["batched_requests"] / batches if batches else None
        )
        return counts

    def _envelope(self) -> dict[str, Any]:
        """The inputs served as tuned, and what happens to a request outside them."""
        spec = self.saved.spec
        dynamic = {t.name: {str(d.axis): [d.min, d.max] for d in t.dynamic} for t in spec.tensors}
        has_eager = self.tuned is not None and self.tuned.source_module is not None
        return {
            "inputs": [{"name": s.name, "dtype": s.dtype, "dims": list(s.dims)} for s in self.sigs],
            "dynamic": {k: v for k, v in dynamic.items() if v},
            "batch_axis": spec.batch_axis,
            "max_batch_size": None if self.tuned is None else self.tuned.max_batch_size,
            "outside": "eager" if has_eager or self.eager else "refused (422)",
        }

    def info(self) -> dict[str, Any]:
        """What ``GET /info`` returns (see the module rules)."""
        saved = self.saved
        return {
            "backend": "eager (control)" if self.eager else saved.selection.backend,
            "kind": "eager" if self.eager else saved.kind,
            "device": str(self.device),
            "batching": self.plan.to_json(),
            "envelope": self._envelope(),
            "outputs": list(saved.outputs),
            "decision": list(saved.decision),
            "served": self._served_counts(),
        }

    def _request(self, content_type: str | None, body: bytes) -> Request | PayloadError:
        tensors = decode(content_type, body, self.sigs)
        if isinstance(tensors, PayloadError):
            return tensors
        moved = {k: v.to(self.device) for k, v in tensors.items()}
        args, kwargs = as_call(moved, self.saved.spec)
        rows = int(next(iter(moved.values())).shape[self.saved.spec.batch_axis])
        sizes = {int(t.shape[self.saved.spec.batch_axis]) for t in moved.values()}
        if len(sizes) > 1:
            return PayloadError(422, f"the inputs disagree on the batch size: {sorted(sizes)}")
        return Request(args, kwargs, rows)

    def _read(self, content_type: str | None, body: bytes) -> Request | PayloadError:
        """The request in ``body``; anything a decoder raises is the payload's fault (400)."""
        try:
            return self._request(content_type, body)
        except Exception as error:  # a decoder's surprise is still the payload's fault
            first = (str(error).strip().splitlines() or [type(error).__name__])[0]
            return PayloadError(400, f"the payload could not be read: {first}")

    async def _outputs(self, request: Request, infer: Infer) -> Any:
        """The model's outputs for ``request``: batched by ``infer``, or run alone."""
        if self._batched(request):
            outputs = await infer(request)
        else:
            self.counts["alone"] += 1
            outputs = await asyncio.to_thread(self._run_alone, request)
        if isinstance(outputs, BaseException):
            raise outputs
        return outputs

    async def predict(self, content_type: str | None, body: bytes, infer: Infer) -> Reply:
        """Answer ``POST /predict`` (see the module rules)."""
        self.counts["requests"] += 1
        request = self._read(content_type, body)
        if isinstance(request, PayloadError):
            self.counts["refused"] += 1
            return _refused(request.status, request.reason)
        try:
            outputs = await self._outputs(request, infer)
        except OutsideEnvelopeError as error:
            self.counts["refused"] += 1
            return _refused(422, str(error))
        except Exception as error:
            self.counts["failed"] += 1
            first = (str(error).strip().splitlines() or [""])[0]
            return _refused(500, f"the model raised {type(error).__name__}: {first}")
        kind, data = encode(outputs, media_type(content_type))
        return Reply(200, kind, data)

    async def handle(
        self, method: str, path: str, content_type: str | None, body: bytes, infer: Infer
    ) -> Reply:
        """The reply to one HTTP request."""
        route = path.rstrip("/") or "/"
        if route == "/health" and method == "GET":
            return _json(200, {"status": "ok", "backend": self.info()["backend"]})
        if route == "/info" and method == "GET":
            return _json(200, self.info())
        if route in PREDICT and method == "POST":
            return await self.predict(content_type, body, infer)
        if route in (*PREDICT, "/health", "/info"):
            return _refused(405, f"{method} is not allowed on {route}")
        return _refused(404, f"no route {route}; use POST /predict, GET /health or GET /info")

    async def infer_alone(self, request: Request) -> Any:
        """A batcher of one (no Ray): runs ``request`` as a batch of its own."""
        results, sizes = await asyncio.to_thread(self.run_batch, [request])
        self.counted(1, sizes)
        return results[0]
