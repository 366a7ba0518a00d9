"""A saved ``TunedGenerator`` as a Ray Serve application with the ``/generate`` route.

Rules:
- the save is read first (:func:`~aitune_fp.shell.generation.tuned_generator.
  is_generator_save`, then its sealed record checked against ``module``), so a folder that
  is not a generator save, or a module it was not tuned from, fails before Ray starts;
- the pick is a recipe: ``module`` (the model it was tuned from) is required, and each
  replica rebuilds the pick over it without re-tuning (``TunedGenerator.load``);
- ``tokenizer`` (optional) lets requests send ``text`` and answers carry decoded text;
- Ray and Serve are started or joined as :mod:`aitune_fp.shell.serving.ray_serve` says;
  the routes are :mod:`aitune_fp.shell.serving.generate_endpoint`'s.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aitune_fp.core.record.json_codec import to_json
from aitune_fp.shell.generation.generator_save import load_record
from aitune_fp.shell.generation.tuned_generator import TunedGenerator, is_generator_save
from aitune_fp.shell.serving.generate_endpoint import GenerateEndpoint
from aitune_fp.shell.serving.ray_serve import ServeOptions, Serving, launch


def _application(serve: Any, path: str, module: Any, tokenizer: Any, options: ServeOptions) -> Any:
    @serve.deployment(
        name="TunedGenerator",
        num_replicas=options.replicas,
        ray_actor_options={"num_cpus": options.replica_cpus},
        max_ongoing_requests=16,
    )
    class GeneratorModel:
        def __init__(self, path: str, module: Any, tokenizer: Any) -> None:
            self.endpoint = GenerateEndpoint(TunedGenerator.load(path, module=module), tokenizer)

        async def __call__(self, request: Any) -> Any:
            from starlette.responses import Response

            body = await request.body()
            reply = await self.endpoint.handle(request.method, request.url.path, body)
            return Response(reply.body, status_code=reply.status, media_type=reply.content_type)

    return GeneratorModel.bind(path, module, tokenizer)  # type: ignore[attr-defined]


def serve_generator(
    path: str | Path, module: Any, tokenizer: Any = None, options: ServeOptions | None = None
) -> Serving[dict[str, Any]]:
    """Serve the generator saved at ``path`` over ``module`` (see the module rules); the
    returned :class:`Serving` holds the saved record."""
    if not is_generator_save(path):
        raise ValueError(f"{path} is not a folder written by TunedGenerator.save")
    if module is None:
        raise ValueError(
            "a saved generator is a recipe: pass the model it was tuned from (--module)"
        )
    saved = load_record(path, module)
    picked = saved.choice.result
    record: dict[str, Any] = {**to_json(saved), "prefill": picked.prefill, "decode": picked.decode}
    resolved = str(Path(path).resolve())
    chosen = options or ServeOptions()
    return launch(
        lambda serve: _application(serve, resolved, module, tokenizer, chosen), record, chosen
    )
