"""Torch-TensorRT's inputs, outputs and engines as the build sees them (no SDK import).

Rules:
- a compiled module computing in ``dtype`` is fed floating inputs cast to it and gives its
  outputs back in the eager dtypes (:func:`cast_io`, :func:`cast_batch`);
- the engines are found by running, not by looking: while :func:`called_engines` is open,
  every Torch-TensorRT engine module that runs (``TorchTensorRTModule`` or
  ``PythonTorchTensorRTModule``, the runtime module classes of 2.12–2.14) is recorded with
  the dtypes of its floating inputs and outputs, wherever it sits (an AOT-compiled module,
  or the graph ``torch.compile`` built, which on a conversion failure is the original
  PyTorch graph with no engine at all);
- :func:`compilation_settings` are the settings passed to Torch-TensorRT (an option
  the installed version lacks is refused, never dropped);
- :func:`check_precision` refuses a build in which no engine ran and an fp16 (bf16)
  request whose engines saw no float16 (bfloat16) tensor;
- a just-in-time runner compiles again at each new input shape, so it is checked again
  there (:func:`checked_per_shape`): the second call of each shape (the first compiles)
  runs under :func:`called_engines` and :func:`check_precision`, so a shape that fell back
  to PyTorch raises instead of being timed as ``torch_tensorrt``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import torch
import torch.utils._pytree as pytree

from aitune_fp.effects.backends._runner import in_inference_mode
from aitune_fp.effects.inputs.samples import Batch


def cast_batch(batch: Batch, dtype: torch.dtype) -> Batch:
    """``batch`` with its floating tensors in ``dtype`` (integers untouched)."""

    def cast(t: torch.Tensor) -> torch.Tensor:
        return t.to(dtype) if t.is_floating_point() else t

    return Batch(
        tuple(cast(a) for a in batch.args),
        {k: cast(v) for k, v in batch.kwargs.items()},
        batch.size,
    )


def cast_io(
    compiled: Callable[..., Any], dtype: torch.dtype, eager_dtypes: tuple[torch.dtype, ...]
) -> Callable[..., Any]:
    """A runner feeding ``compiled`` floating inputs in ``dtype`` and returning its outputs
    in the eager dtypes (what the engines computed in is read by :func:`called_engines`,
    never from these outputs: the cast module produces ``dtype`` whatever ran).

    >>> run = cast_io(lambda x: x * 2, torch.float16, (torch.float32,))
    >>> run(torch.ones(2)).dtype
    torch.float32
    """

    def cast_in(t: Any) -> Any:
        return t.to(dtype) if isinstance(t, torch.Tensor) and t.is_floating_point() else t

    def run(*args: Any, **kwargs: Any) -> Any:
        out = compiled(*pytree.tree_map(cast_in, args), **pytree.tree_map(cast_in, kwargs))
        leaves, spec = pytree.tree_flatten(out)
        wanted = iter(eager_dtypes)
        back = [t.to(next(wanted)) if isinstance(t, torch.Tensor) else t for t in leaves]
        return pytree.tree_unflatten(back, spec)

    return in_inference_mode(run)


def is_engine_module(module: torch.nn.Module) -> bool:
    """Whether ``module`` is a Torch-TensorRT engine (its C++ or Python runtime module class,
    ``TorchTensorRTModule`` / ``PythonTorchTensorRTModule``)."""
    return type(module).__name__.endswith("TorchTensorRTModule")


@contextlib.contextmanager
def called_engines(
    engines: list[torch.nn.Module], saw: Callable[[list[torch.dtype]], None]
) -> Iterator[None]:
    """While open, every engine module that runs is appended to ``engines`` (once) and
    reports its floating tensors' dtypes to ``saw``.

    A global forward hook sees the engines wherever they are: inside an AOT-compiled
    module, or inside the graph ``torch.compile`` built on the first call (JIT), which
    Torch-TensorRT returns unchanged, with no engine, when conversion fails and
    ``pass_through_build_failures`` is off.
    """

    def hook(module: torch.nn.Module, args: Any, output: Any) -> None:
        if not is_engine_module(module):
            return
        if all(module is not m for m in engines):
            engines.append(module)
        leaves = [*pytree.tree_leaves(args), *pytree.tree_leaves(output)]
        saw([t.dtype for t in leaves if isinstance(t, torch.Tensor) and t.is_floating_point()])

    handle = torch.nn.modules.module.register_module_forward_hook(hook)
    try:
        yield
    finally:
        handle.remove()


def check_precision(requested: str, seen: list[torch.dtype], engines: list[torch.nn.Module]) -> str:
    """The effective precision from the dtypes the engines ran with; refuse a build with no
    engine that ran, or one that did not honour the request.

    >>> check_precision("float16", [torch.float16, torch.float16], [torch.nn.Identity()])
    'float16'
    >>> check_precision("float32", [], [])
    Traceback (most recent call last):
    ...
    RuntimeError: Torch-TensorRT built no TensorRT engine: the whole module runs in PyTorch
    >>> check_precision("float16", [torch.float32], [torch.nn.Identity()])
    Traceback (most recent call last):
    ...
    RuntimeError: asked for float16 but the TensorRT engines' tensors are float32
    >>> check_precision("bfloat16", [torch.bfloat16], [torch.nn.Identity()])
    'bfloat16'
    """
    if not engines:
        raise RuntimeError(
            "Torch-TensorRT built no TensorRT engine: the whole module runs in PyTorch"
        )
    kinds = sorted({str(d).removeprefix("torch.") for d in seen})
    effective = "float16" if "float16" in kinds else "bfloat16" if "bfloat16" in kinds else None
    if requested in ("float16", "bfloat16") and effective != requested:
        raise RuntimeError(
            f"asked for {requested} but the TensorRT engines' tensors are "
            f"{', '.join(kinds) or 'none'}"
        )
    return effective or requested


ShapeKey = tuple[tuple[int, ...], ...]


def shape_key(*args: Any, **kwargs: Any) -> ShapeKey:
    """The shapes of a call's tensors, in pytree leaf order (plain tensor arguments without
    a pytree walk: it runs on every call).

    >>> shape_key(torch.zeros(2, 3), x=[torch.zeros(4)])
    ((2, 3), (4,))
    """
    if not kwargs and all(isinstance(a, torch.Tensor) for a in args):
        return tuple(tuple(a.shape) for a in args)
    leaves = [*pytree.tree_leaves(args), *pytree.tree_leaves(kwargs)]
    return tuple(tuple(t.shape) for t in leaves if isinstance(t, torch.Tensor))


def checked_per_shape(
    runner: Callable[..., Any], requested: str, checked: Iterable[ShapeKey] = ()
) -> Callable[..., Any]:
    """``runner`` (a JIT-compiled one) checked at every new input shape (see the module
    rules); ``checked`` are the shapes the build already checked."""
    calls: dict[ShapeKey, int] = dict.fromkeys(checked, 2)

    def run(*args: Any, **kwargs: Any) -> Any:
        key = shape_key(*args, **kwargs)
        count = calls.get(key, 0)
        calls[key] = min(count + 1, 2)
        if count != 1:  # the first call compiles (no hook in dynamo's way); later ones ran
            return runner(*args, **kwargs)
        engines: list[torch.nn.Module] = []
        seen: list[torch.dtype] = []
        with called_engines(engines, seen.extend):
            out = runner(*args, **kwargs)
        try:
            check_precision(requested, seen, engines)
        except RuntimeError as error:
            raise RuntimeError(f"at input shapes {list(key)}: {error}") from None
        return out

    return run


def compilation_settings(
    known: set[str],
    *,
    tf32: bool,
    options: tuple[tuple[str, Any], ...],
    device: torch.device | None = None,
) -> dict[str, Any]:
    """The settings passed to Torch-TensorRT: the tuned ``device``, a block that fails to
    build raised instead of quietly left to PyTorch (``pass_through_build_failures``), TF32
    policy where supported, plus ``options`` (which win); an option the installed version
    does not know is refused (it would be dropped quietly).

    >>> compilation_settings({"disable_tf32", "min_block_size"}, tf32=False,
    ...                      options=(("min_block_size", 1),))
    {'disable_tf32': True, 'min_block_size': 1}
    >>> compilation_settings({"device", "pass_through_build_failures"}, tf32=False, options=(),
    ...                      device=torch.device("cuda", 1))
    {'device': device(type='cuda', index=1), 'pass_through_build_failures': True}
    >>> compilation_settings({"min_block_size"}, tf32=False, options=(("enabled_precisions", 1),))
    Traceback (most recent call last):
    ...
    ValueError: this Torch-TensorRT has no compilation setting 'enabled_precisions'
    """
    settings: dict[str, Any] = {}
    if device is not None and "device" in known:
        settings["device"] = device
    if "pass_through_build_failures" in known:
        settings["pass_through_build_failures"] = True
    if "disable_tf32" in known:
        settings["disable_tf32"] = not tf32
    for name, value in options:
        if name not in known:
            raise ValueError(f"this Torch-TensorRT has no compilation setting {name!r}")
        settings[name] = value
    return settings
