"""A saved tuned model as a Ray Serve application, with the batching it was tuned for.

Rules:
- Ray is imported here only, inside the functions that need it; without ``ray[serve]`` the
  error is one line naming the extra (:data:`INSTALL_HINT`);
- without ``address`` a local Ray is started with ``num_cpus`` CPUs (all when ``None``),
  no dashboard, and shut down by :meth:`Serving.stop`; with one, the cluster is joined and
  left as it was (only this application is deleted);
- the HTTP proxy listens on ``host:port`` (``127.0.0.1:8000`` by default); the application
  is one deployment of ``replicas`` replicas, each with ``replica_cpus`` CPUs and one GPU
  when the device is CUDA; each replica loads the folder itself (sealed and verified) and
  batches with Ray Serve's ``@serve.batch``: maximum batch = the plan's, counted in rows,
  batch wait = the plan's (:mod:`aitune_fp.core.serving.plan`); a batch runs in a worker
  thread, so requests keep queueing while the model runs;
- Ray's C++ failure signal handler is off in the serving process and the Ray it starts
  (``RAY_DISABLE_FAILURE_SIGNAL_HANDLER=1`` unless the environment says otherwise): it
  catches SIGTERM too, and its abort (exit by SIGABRT, or code 15) replaced the command's
  own clean stop (Serve and Ray shut down, exit 143); a crash of a Ray process then has
  no C++ stack trace in its log;
- ``ray.init`` replaces the process's SIGTERM handler with its own (``sys.exit(15)``):
  :func:`_init_ray` puts the caller's SIGTERM and SIGINT handlers back as soon as it
  returns, before the application is deployed and answers, so a signal that comes once
  the server answers always takes the command's own way out.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar

from aitune_fp.core.serving.plan import ServingPlan
from aitune_fp.effects.serving.batching import Request, total_rows
from aitune_fp.shell.serving.endpoint import Endpoint
from aitune_fp.shell.serving.saved import Saved, Served

S = TypeVar("S")
INSTALL_HINT: Final = "serving needs Ray Serve: pip install 'aitune_fp[serve]'"
LOCAL_OBJECT_STORE_BYTES: Final = 256 * 1024**2


class ServeError(RuntimeError):
    """Serving could not start; the message is one line."""


@dataclass(frozen=True, slots=True)
class ServeOptions:
    """Where and how to serve: cluster, HTTP address, replicas and their resources."""

    address: str | None = None
    host: str = "127.0.0.1"
    port: int = 8000
    replicas: int = 1
    replica_cpus: float = 1.0
    num_cpus: int | None = None
    name: str = "aitune_fp"
    log_to_driver: bool = False


def ray_serve() -> Any:
    """``ray.serve``, or a :class:`ServeError` naming the extra to install; Ray's failure
    signal handler is turned off first (module rules)."""
    os.environ.setdefault("RAY_DISABLE_FAILURE_SIGNAL_HANDLER", "1")
    try:
        import ray  # noqa: F401
        import starlette  # noqa: F401
        from ray import serve
    except ImportError:
        raise ServeError(INSTALL_HINT) from None
    return serve


def _deployment_options(served: Served, saved: Saved, options: ServeOptions) -> dict[str, Any]:
    """The deployment's name, replicas, their resources (a GPU for a CUDA device) and how
    many requests each takes at once."""
    gpus = 1 if (served.device or saved.device).startswith("cuda") else 0
    return {
        "name": "TunedModel",
        "num_replicas": options.replicas,
        "ray_actor_options": {"num_cpus": options.replica_cpus, "num_gpus": gpus},
        "max_ongoing_requests": max(64, 4 * saved.plan.max_batch_size),
    }


async def _respond(endpoint: Endpoint, request: Any, infer: Any) -> Any:
    """The Starlette response to one HTTP request, answered by ``endpoint``."""
    from starlette.responses import Response

    body = await request.body()
    content_type = request.headers.get("content-type")
    reply = await endpoint.handle(request.method, request.url.path, content_type, body, infer)
    return Response(reply.body, status_code=reply.status, media_type=reply.content_type)


def _batch_options(plan: ServingPlan) -> dict[str, Any]:
    """Serve's batching: up to the plan's rows, waiting at most its batch wait.

    >>> from aitune_fp.core.serving.plan import plan_from_tune
    >>> options = _batch_options(plan_from_tune("onnxruntime", 8, 4.0))
    >>> options["max_batch_size"], options["batch_wait_timeout_s"]
    (8, 0.002)
    """
    return {
        "max_batch_size": plan.max_batch_size,
        "batch_wait_timeout_s": plan.batch_wait_ms / 1000.0,
        "batch_size_fn": total_rows,
    }


def _application(serve: Any, served: Served, saved: Saved, options: ServeOptions) -> Any:
    @serve.deployment(**_deployment_options(served, saved, options))
    class TunedModel:
        def __init__(self, served: Served, saved: Saved) -> None:
            self.endpoint = Endpoint(served, saved)

        async def __call__(self, request: Any) -> Any:
            return await _respond(self.endpoint, request, self.infer)

        @serve.batch(**_batch_options(saved.plan))  # type: ignore[untyped-decorator]
        async def infer(self, requests: list[Request]) -> list[Any]:
            results, sizes = await asyncio.to_thread(self.endpoint.run_batch, requests)
            self.endpoint.counted(len(requests), sizes)
            return results

    return TunedModel.bind(served, saved)  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True)
class Serving(Generic[S]):
    """A running application: its URL and what it serves (a save's facts: plan, decision);
    :meth:`stop` ends it."""

    url: str
    saved: S
    options: ServeOptions
    started_ray: bool
    started_serve: bool

    def stop(self) -> None:
        """Delete the application; shut Serve and Ray down when they were started here."""
        import ray
        from ray import serve

        if not ray.is_initialized():
            return
        if self.started_ray:  # the local Ray goes, and Serve's actors with it
            ray.shutdown()
        elif self.started_serve:
            serve.shutdown()  # type: ignore[no-untyped-call]
        else:
            serve.delete(self.options.name)


def _init_ray(options: ServeOptions) -> bool:
    """Start a local Ray (or join ``options.address``) unless one runs; whether it was."""
    import ray

    if ray.is_initialized():
        return False
    local = options.address is None
    with handlers_kept():
        ray.init(
            address=options.address,
            num_cpus=options.num_cpus if local else None,
            include_dashboard=False,
            log_to_driver=options.log_to_driver,
            object_store_memory=LOCAL_OBJECT_STORE_BYTES if local else None,
        )
    return True


@contextmanager
def handlers_kept() -> Iterator[None]:
    """The SIGTERM and SIGINT handlers as they were before the block, put back after it
    (in the main thread only: elsewhere nothing can set them)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)


def start(served: Served, saved: Saved, options: ServeOptions) -> Serving[Saved]:
    """Deploy ``saved`` with ``served``'s model on Ray Serve and return once it answers."""
    return launch(lambda serve: _application(serve, served, saved, options), saved, options)


def launch(build: Callable[[Any], Any], saved: S, options: ServeOptions) -> Serving[S]:
    """Run the application ``build(serve)`` makes (Ray and Serve started or joined as the
    module rules say) and return once it answers; ``saved`` describes what it serves."""
    serve = ray_serve()
    started_ray = _init_ray(options)
    started_serve = started_ray  # a joined cluster keeps its Serve; only our app is deleted
    serving = Serving(
        f"http://{options.host}:{options.port}", saved, options, started_ray, started_serve
    )
    try:
        serve.start(http_options={"host": options.host, "port": options.port})
        app = build(serve)
        serve.run(app, name=options.name, route_prefix="/", blocking=False)
    except BaseException as error:
        serving.stop()
        if isinstance(error, Exception):
            first = (str(error).strip().splitlines() or [type(error).__name__])[0]
            raise ServeError(f"the application did not start: {first}") from None
        raise
    return serving
