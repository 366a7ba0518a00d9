"""Prefill and decode steps over a static KV cache, taking and returning plain tensors.

Rules: the cache is allocated once per (batch, max length) in the model's dtype, its layers
plain static layers initialised ahead (sliding-window layers become plain ones, Hugging
Face's export recipe; their masks still slide), and before each step every layer's length is
set to the step's start, so any phase may run on any backend after any other. The attention
mask handed to the model always has the cache's full length (prompt mask, then ones), so the
decode step has one static shape and a compiled step never recompiles across steps.
A compiled (``inductor``) decode step recompiles per (batch, cache capacity) and Dynamo stops
compiling a code object after ``recompile_limit`` (8) shapes, so: its cache capacity is
rounded up to a power of two (at least 64, :func:`capacity_for`), so prompts and token counts
of one bucket share a graph; each stepper compiles its own copy of the step function (Dynamo
keeps compiled graphs and counts recompiles per code object, so steppers over other models
or dtypes never use up this one's limit); the decode step's token tensor is copied to a
contiguous inference tensor before the call (a caller's slice or a tensor made outside
inference mode would otherwise fail Dynamo's stride and dispatch-key guards).
Positions follow the mask (left padding counts from the first real token), as Hugging Face
``generate`` computes them. The cache, masks, positions and ``cache_position`` are made on the
model's device (:func:`aitune_fp.effects.generation.devices.model_device`), never on the CPU
for a CUDA model. A phase is eager, ``torch.compile`` (``inductor``), an
AOTInductor package (``aoti``, :mod:`aitune_fp.effects.generation.aoti_steps`) or, for the
decode phase, the eager step captured in a CUDA graph (``cudagraph``,
:mod:`aitune_fp.effects.generation.graph_steps`: refused off CUDA before anything is built;
its cache capacity is bucketed as a compiled step's, so one capture serves a bucket).
"""

from __future__ import annotations

import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from transformers import StaticCache
from transformers.cache_utils import StaticLayer

from aitune_fp.effects.generation.aoti_steps import AotiStore
from aitune_fp.effects.generation.cache_module import cache_shapes, next_logits
from aitune_fp.effects.generation.devices import model_device
from aitune_fp.effects.generation.graph_steps import GraphStep, cuda_refusal

Step = Callable[..., torch.Tensor]
KINDS = ("eager", "inductor", "aoti", "cudagraph")
BUCKETED = ("inductor", "cudagraph")
"""Decode kinds whose cache capacity is rounded up (:func:`capacity_for`)."""
MIN_CAPACITY = 64


def capacity_for(max_len: int) -> int:
    """The cache capacity a compiled decode step gets for ``max_len`` positions: the next
    power of two, at least :data:`MIN_CAPACITY`.

    >>> [capacity_for(n) for n in (1, 64, 65, 96, 320)]
    [64, 64, 128, 128, 512]
    """
    return max(MIN_CAPACITY, 1 << max(max_len - 1, 0).bit_length())


@dataclass(frozen=True, slots=True)
class StepRecipe:
    """How a candidate runs one phase: ``kind`` in :data:`KINDS`; ``budget_s`` bounds an
    AOTInductor compile, ``store`` holds the tune's packages (a store of its own when none
    is passed; the model's dtype is set by the caller: a bf16 candidate hands a bf16 copy of
    the model); ``cuda`` is the ``torch.cuda`` namespace a ``cudagraph`` step captures with
    (``None``: torch's own, which needs a CUDA model; a test passes a fake)."""

    kind: str = "eager"
    budget_s: float = 600.0
    store: AotiStore | None = None
    cuda: Any = None


def _forward(model: torch.nn.Module) -> Step:
    def step(*args: Any) -> torch.Tensor:
        return next_logits(model, *args)

    return step


def _own_code(step: Step) -> Step:
    """``step`` over a copy of its code object (Dynamo's compile cache and recompile count
    are per code object; see the module rules)."""
    code = step.__code__
    return types.FunctionType(
        code.replace(), step.__globals__, code.co_name, None, step.__closure__
    )


def make_step(model: torch.nn.Module, recipe: StepRecipe, dynamic: bool) -> Step:
    """The phase's step function (an AOTInductor package is built or loaded here)."""
    if recipe.kind not in KINDS:
        raise ValueError(f"unknown step kind {recipe.kind!r}; expected one of {KINDS}")
    if recipe.kind == "aoti":
        store = recipe.store if recipe.store is not None else AotiStore()
        return store.load(store.build(model, recipe.budget_s))
    base = _forward(model)
    if recipe.kind == "cudagraph":
        refused = cuda_refusal(model_device(model)) if recipe.cuda is None else None
        if refused is not None:
            raise ValueError(refused)
        return GraphStep(base, recipe.cuda)
    return torch.compile(_own_code(base), dynamic=dynamic) if recipe.kind == "inductor" else base


def static_cache(model: torch.nn.Module, batch: int, max_len: int) -> Any:
    """A ``StaticCache`` of plain static layers, initialised for ``batch`` rows on the
    model's device."""
    config: Any = model.config
    cache = StaticCache(config=config, max_cache_len=max_len)
    cache.layers = [StaticLayer(max_len) for _ in cache.layers]
    _, heads, head_dim = cache_shapes(model)
    dtype = next(model.parameters()).dtype
    cache.early_initialization(batch, heads, head_dim, dtype, model_device(model))
    return cache


class StaticStepper:
    """A model's prefill and decode steps over one static cache (plain tensors in and out)."""

    def __init__(self, model: torch.nn.Module, prefill: StepRecipe, decode: StepRecipe) -> None:
        self.model = model
        self.device = model_device(model)
        self.prefill_recipe, self.decode_recipe = prefill, decode
        self._prefill = make_step(model, prefill, dynamic=True)
        self._decode = (
            self._prefill
            if prefill == decode and prefill.kind == "aoti"
            else make_step(model, decode, dynamic=False)
        )
        self._cache: Any = None
        self._cache_key: tuple[int, int] = (0, 0)
        self._mask = torch.ones(0)
        self._next_pos = torch.zeros(0)
        self._length = 0

    def _cache_for(self, batch: int, max_len: int) -> Any:
        if self.decode_recipe.kind in BUCKETED:
            max_len = capacity_for(max_len)
        if self._cache is None or self._cache_key != (batch, max_len):
            self._cache = static_cache(self.model, batch, max_len)
            self._cache_key = (batch, max_len)
        return self._cache

    def _start(self, at: int) -> None:
        for layer in self._cache.layers:
            layer.cumulative_length.fill_(at)

    @torch.inference_mode()
    def prefill(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None, max_len: int
    ) -> torch.Tensor:
        """Run the prompt from the cache's start, return the next-token logits (float32,
        [B, V])."""
        batch, length = input_ids.shape
        mask = attention_mask if attention_mask is not None else torch.ones_like(input_ids)
        cache = self._cache_for(batch, max_len)
        full = torch.ones(batch, self._cache_key[1], dtype=torch.long, device=self.device)
        full[:, :length] = mask
        positions = (mask.long().cumsum(-1) - 1).clamp(min=0)
        self._mask, self._length = full, length
        self._next_pos = positions[:, -1:] + 1
        self._start(0)
        steps = torch.arange(length, device=self.device)
        return self._prefill(input_ids, full, positions, steps, cache)

    @torch.inference_mode()
    def decode(self, tokens: torch.Tensor) -> torch.Tensor:
        """Append one token per row ([B, 1]) to the cache, return the next-token logits."""
        tokens = tokens.clone(memory_format=torch.contiguous_format)  # see the module rules
        position = self._next_pos
        cache_position = torch.tensor([self._length], device=self.device)
        self._start(self._length)
        self._length += 1
        self._next_pos = position + 1
        return self._decode(tokens, self._mask, position, cache_position, self._cache)
