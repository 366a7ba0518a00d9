"""Open an ONNX Runtime session that runs on the providers asked for, or fail saying why.

Rules:
- the session is created with ONNX Runtime's own fallback disabled (``enable_fallback=0``)
  and everything it says meanwhile is kept: Python warnings, what it prints (its "EP Error"
  lines) and what its native logger writes to file descriptor 2 (e.g. a provider library
  that cannot be loaded);
- afterwards ``get_providers()`` is compared with the providers requested: each requested
  provider must be among those the session really uses (ONNX Runtime appends the CPU
  provider for nodes no other provider takes; that is not a mismatch);
- a mismatch, or a session that cannot be created, is an :class:`ProviderMismatch` naming
  what was asked, what runs and the lines ONNX Runtime gave as the reason; nothing falls
  back quietly, so what the record says ran is what ran.

Longer than 260 lines: every provider's session options and fallbacks are one decision about
one session.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import tempfile
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Final

from aitune_fp.effects.inputs.samples import InputSpec

OPT_LEVELS: Final = {
    "disable": "ORT_DISABLE_ALL",
    "basic": "ORT_ENABLE_BASIC",
    "extended": "ORT_ENABLE_EXTENDED",
    "all": "ORT_ENABLE_ALL",
}
EXECUTION_MODES: Final = {"sequential": "ORT_SEQUENTIAL", "parallel": "ORT_PARALLEL"}
_REASON_LINES = 6
_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # ONNX Runtime colours its native log lines


class ProviderMismatch(RuntimeError):
    """The session does not run on the providers requested (or could not be created)."""


def provider_names(providers: Sequence[Any]) -> tuple[str, ...]:
    """The names in an ONNX Runtime ``providers`` list (names or ``(name, options)`` pairs).

    >>> provider_names(["CPUExecutionProvider", ("CUDAExecutionProvider", {"device_id": 0})])
    ('CPUExecutionProvider', 'CUDAExecutionProvider')
    """
    return tuple(p[0] if isinstance(p, tuple) else str(p) for p in providers)


def missing_providers(requested: Sequence[str], active: Sequence[str]) -> tuple[str, ...]:
    """The requested providers the session does not use.

    >>> cuda, cpu = "CUDAExecutionProvider", "CPUExecutionProvider"
    >>> missing_providers([cuda], [cuda, cpu])
    ()
    >>> missing_providers(["TensorrtExecutionProvider", cuda], [cuda, cpu])
    ('TensorrtExecutionProvider',)
    """
    return tuple(p for p in requested if p not in active)


def reason_lines(text: str) -> str:
    """The lines of ONNX Runtime's output that explain a provider problem, joined.

    >>> reason_lines("ok\\n\\x1b[1;31m[E:onnxruntime] Failed to load libx.so\\x1b[m\\nother")
    '[E:onnxruntime] Failed to load libx.so'
    """
    keys = ("ep error", "provider", "failed", "error", "cannot open", "not in available")
    lines = [ln.strip() for ln in _ANSI.sub("", text).splitlines()]
    lines = [ln for ln in lines if ln and not (ln.startswith("***") and ln.endswith("***"))]
    picked = [ln for ln in lines if any(k in ln.lower() for k in keys)]
    return " | ".join(picked[:_REASON_LINES])


def mismatch_message(requested: Sequence[str], active: Sequence[str], said: str) -> str:
    """What was asked, what runs and why, in one message.

    >>> print(mismatch_message(["CUDAExecutionProvider"], ["CPUExecutionProvider"], ""))
    ... # doctest: +NORMALIZE_WHITESPACE
    asked ONNX Runtime for ['CUDAExecutionProvider'] but the session runs on
    ['CPUExecutionProvider'] (missing: CUDAExecutionProvider); ONNX Runtime gave no reason
    """
    missing = ", ".join(missing_providers(requested, active))
    why = reason_lines(said) or "ONNX Runtime gave no reason"
    return (
        f"asked ONNX Runtime for {list(requested)} but the session runs on {list(active)} "
        f"(missing: {missing}); {why}"
    )


@contextlib.contextmanager
def _native_stderr(sink: io.StringIO) -> Iterator[None]:
    """Copy what native code writes to file descriptor 2 into ``sink`` (best effort)."""
    try:
        saved = os.dup(2)
    except OSError:
        yield
        return
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            sink.write(tmp.read().decode("utf-8", errors="replace"))


def session_options(ort: Any, config: Any) -> Any:
    """``ort.SessionOptions`` with ``config``'s runtime options: intra-op threads, graph
    optimisation level, execution mode and extra session config entries."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = config.intra_op_threads
    options.graph_optimization_level = getattr(
        ort.GraphOptimizationLevel, OPT_LEVELS[config.graph_optimization]
    )
    options.execution_mode = getattr(ort.ExecutionMode, EXECUTION_MODES[config.execution_mode])
    for key, value in config.session_config:
        options.add_session_config_entry(key, value)
    return options


def open_checked_session(
    ort: Any,
    path: str,
    options: Any,
    providers: Sequence[Any],
    said_to: Callable[[str], None] = lambda _: None,
) -> Any:
    """``ort.InferenceSession(path, options, providers)`` that really runs on ``providers``.

    What ONNX Runtime said while the session was created goes to ``said_to`` (one call).
    Raises :class:`ProviderMismatch` (with ONNX Runtime's own words) when a requested
    provider is not in the session's ``get_providers()`` or the session cannot be created.
    """
    requested = provider_names(providers)
    said = io.StringIO()
    session = None
    error: Exception | None = None
    with (
        warnings.catch_warnings(record=True) as caught,
        contextlib.redirect_stdout(said),
        _native_stderr(said),
    ):
        warnings.simplefilter("always")
        try:
            session = ort.InferenceSession(
                path, sess_options=options, providers=list(providers), enable_fallback=0
            )
        except Exception as e:  # an EP that fails to load raises once fallback is off
            error = e
    text = "\n".join([*(str(w.message) for w in caught), said.getvalue()]).strip()
    if text:
        said_to(text)
    if session is None:
        raise ProviderMismatch(
            f"ONNX Runtime could not create a session on {list(requested)}: "
            f"{type(error).__name__}: {error}; {reason_lines(text)}".rstrip("; ")
        ) from error
    active = tuple(session.get_providers())
    if missing_providers(requested, active):
        raise ProviderMismatch(mismatch_message(requested, active, text))
    return session


def trt_profile_options(spec: InputSpec, max_batch: int, opt_batch: int) -> dict[str, str]:
    """The TensorRT provider's optimisation profile: the same rows as the ``tensorrt``
    backend's (:meth:`~aitune_fp.effects.inputs.spec.TensorSpec.profile`): batch 1 /
    ``opt_batch`` / ``max_batch``, every dynamic axis at its declared min / opt / max (never
    pinned to the samples).

    >>> import torch
    >>> from aitune_fp.effects.inputs.samples import normalise_samples
    >>> spec = normalise_samples([torch.zeros(1, 8), torch.zeros(1, 12)]).spec
    >>> options = trt_profile_options(spec, 4, 1)
    >>> options["trt_profile_opt_shapes"], options["trt_profile_max_shapes"]
    ('input_0:1x12', 'input_0:4x12')
    """
    rows = [t.profile((1, opt_batch, max_batch), spec.batch_axis) for t in spec.tensors]
    keys = ("trt_profile_min_shapes", "trt_profile_opt_shapes", "trt_profile_max_shapes")
    return {
        key: ",".join(
            f"{t.name}:" + "x".join(str(d) for d in row[which])
            for t, row in zip(spec.tensors, rows, strict=True)
        )
        for which, key in enumerate(keys)
    }


PARTITIONED_PROFILES: Final = (
    "User needs to provide all the dynamic shape inputs with associated profiles"
)
"""The TensorRT EP's refusal of explicit profiles when the graph was partitioned into
TRT/CUDA/CPU subgraphs and a TRT subgraph has a dynamic input no profile names
(``onnxruntime/core/providers/tensorrt/tensorrt_execution_provider.cc``: "User needs to
provide all the dynamic shape inputs with associated profiles if they want to explicitly
set profiles through provider options. Please note that main graph could be partitioned
into TRT/CUDA/CPU subgraphs, ...")."""
_PROFILE_KEYS: Final = (
    "trt_profile_min_shapes",
    "trt_profile_opt_shapes",
    "trt_profile_max_shapes",
)


SHAPE_LAZY: Final = "TensorRT EP: the graph is partitioned; retrying without explicit profiles"
"""What :func:`open_profiled_session` says when it opens the session without profiles."""


class SaidDuringOpen:
    """What opening a session said (kept, and passed on to ``to``), and the TensorRT
    profile facts the record keeps from it (:meth:`profile_facts`)."""

    def __init__(self, to: Callable[[str], None] = lambda _: None) -> None:
        self.lines: list[str] = []
        self.to = to

    def __call__(self, text: str) -> None:
        """Keep ``text`` and pass it on."""
        self.lines.append(text)
        self.to(text)

    def profile_facts(self, provider: str) -> dict[str, str]:
        """``{"trt_profiles": …}`` for the TensorRT provider: ``explicit`` (batch 1 / max /
        max, every dynamic axis min / opt / max) or ``shape-lazy`` when the partitioned
        graph's session was opened without them: its TensorRT subgraphs then build an
        engine at the first call of each larger input shape, in the tune and in
        production alike (the record says so rather than hide the rebuilds); nothing for
        other providers.

        >>> said = SaidDuringOpen()
        >>> said(SHAPE_LAZY)
        >>> said.profile_facts("tensorrt")["trt_profiles"].split(":")[0]
        'shape-lazy'
        >>> SaidDuringOpen().profile_facts("tensorrt"), said.profile_facts("cuda")
        ({'trt_profiles': 'explicit'}, {})
        """
        if provider != "tensorrt":
            return {}
        if SHAPE_LAZY not in self.lines:
            return {"trt_profiles": "explicit"}
        return {
            "trt_profiles": "shape-lazy: the graph is partitioned, so the TensorRT EP refused "
            "explicit profiles; each TensorRT subgraph builds an engine at the first call of "
            "each larger input shape (in production too)"
        }


def open_profiled_session(
    ort: Any,
    path: str,
    options: Any,
    providers: Sequence[Any],
    said_to: Callable[[str], None] = lambda _: None,
) -> Any:
    """:func:`open_checked_session`; where the TensorRT EP refuses the explicit profiles of
    a partitioned graph (:data:`PARTITIONED_PROFILES`), once more without them (the EP
    then builds its profiles from the shapes it meets), saying so to ``said_to``."""
    try:
        return open_checked_session(ort, path, options, providers, said_to)
    except ProviderMismatch as error:
        if PARTITIONED_PROFILES not in str(error) or not any(
            isinstance(p, tuple) and set(_PROFILE_KEYS) & set(p[1]) for p in providers
        ):
            raise
    said_to(SHAPE_LAZY)
    plain = [
        (p[0], {k: v for k, v in p[1].items() if k not in _PROFILE_KEYS})
        if isinstance(p, tuple)
        else p
        for p in providers
    ]
    return open_checked_session(ort, path, options, plain, said_to)


def trt_cache_options(graph: Path) -> dict[str, Any]:
    """The TensorRT EP's engine cache, kept beside ``graph`` as files of its artifact: the
    cache folder is the graph's own and each file's name starts with ``<graph name>.``
    (``trt_engine_cache_prefix``), so the artifact cache stores the engines with the graph
    (:func:`~aitune_fp.effects.cache.artifacts.artifact_files`) and a cache hit or a saved module
    loads them instead of building them again.

    >>> trt_cache_options(Path("/w/model.onnx"))["trt_engine_cache_prefix"]
    'model.onnx.trt'
    """
    return {
        "trt_engine_cache_enable": True,
        "trt_engine_cache_path": str(graph.parent),
        "trt_engine_cache_prefix": f"{graph.name}.trt",
    }
