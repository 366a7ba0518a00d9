"""The two parts of the samples: the seen rows a calibrating backend calibrates on, and the
held-out inputs the accuracy verdict is taken on.

Rules:
- the split is :func:`~aitune_fp.core.accuracy.split.split_rows` on the samples' row
  count (rows numbered in sample order along the batch axis);
- :func:`seen_samples` is what a calibrating backend (ONNX Runtime's static int8) feeds its
  calibration: one item per sample holding that sample's seen rows, shapes and shape
  groups kept (samples with no seen row are left out);
- :func:`judged_batches` gives the named batches of each part, one per sample holding
  rows of that part (named ``on sample <i>`` when that is the whole sample); when the
  samples are too few to split, the held-out part is
  :func:`fresh_batches`: batches shaped like the samples (cycling through them) whose
  values are drawn, with a fixed seed, from the samples' own range, per input: floating
  inputs from a normal law with the input's mean and standard deviation over every
  sample, integer inputs uniformly within its observed ``[min, max]`` (token ids stay
  in the vocabulary the samples use), bool inputs with its observed share of ``True``;
  so the draws stay inside the tuned envelope (shapes, dtypes, value range);
- :func:`extra_batches` draws more held-out rows the same way when a reduced-precision
  verdict needs them (:mod:`aitune_fp.core.accuracy.evidence`): batches shaped like a
  template (a validated batch size), batch ``k`` of the extra draws from its own seed
  (``SEED + 1 + k``), so the extra rows never repeat the fresh ones and the same samples
  always give the same extra rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

import torch

from aitune_fp.core.accuracy.split import RowSplit, split_rows
from aitune_fp.effects.inputs.samples import Batch, Samples

SEED: Final = 20240917
"""The fixed seed of the fresh draws: the same samples always give the same draws."""

Named = list[tuple[str, Batch]]


def _take(batch: Batch, axis: int, local: Sequence[int]) -> Batch:
    """The rows ``local`` of ``batch`` along ``axis``."""

    def rows(t: torch.Tensor) -> torch.Tensor:
        return t.index_select(axis, torch.tensor(list(local), device=t.device)).contiguous()

    args = tuple(rows(a) for a in batch.args)
    return Batch(args, {k: rows(v) for k, v in batch.kwargs.items()}, len(local))


def _rows_by_sample(samples: Samples, rows: Sequence[int]) -> list[tuple[int, Batch]]:
    """``(sample index, batch of its rows among rows)`` for every sample holding some."""
    wanted, start = set(rows), 0
    out: list[tuple[int, Batch]] = []
    for i, item in enumerate(samples.items):
        local = [r - start for r in range(start, start + item.size) if r in wanted]
        start += item.size
        if local:
            kept = item if len(local) == item.size else _take(item, samples.spec.batch_axis, local)
            out.append((i, kept))
    return out


def seen_samples(samples: Samples) -> Samples:
    """The samples cut to their seen rows (what calibration uses; see the module rules).

    >>> from aitune_fp.effects.inputs.samples import normalise_samples
    >>> s = seen_samples(normalise_samples([torch.arange(6.0).reshape(6, 1)]))
    >>> s.items[0].args[0].flatten().tolist(), s.rows
    ([0.0, 2.0, 4.0], 3)
    """
    kept = _rows_by_sample(samples, split_rows(samples.rows).seen)
    where = {old: new for new, (old, _) in enumerate(kept)}
    groups = tuple(tuple(where[i] for i in g if i in where) for g in samples.shape_groups())
    return Samples(
        samples.spec,
        tuple(b for _, b in kept),
        tuple(g for g in groups if g),
        samples.batched,
    )


def _draw(t: torch.Tensor, pool: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """A tensor shaped like ``t`` drawn from the value range of ``pool`` (every sample's
    values of that input, on the CPU)."""
    shape = tuple(t.shape)
    if t.dtype == torch.bool:
        share = float(pool.double().mean()) if pool.numel() else 0.5
        drawn = torch.rand(shape, generator=gen, dtype=torch.float64) < share
    elif t.is_floating_point():
        wide = pool.double()
        std = float(wide.std()) if wide.numel() > 1 else 0.0
        noise = torch.randn(shape, generator=gen, dtype=torch.float64)
        drawn = noise * std + float(wide.mean())
    elif t.is_complex():
        drawn = t.cpu().clone()
    else:
        lo, hi = (int(pool.min()), int(pool.max())) if pool.numel() else (0, 0)
        drawn = torch.randint(lo, hi + 1, shape, generator=gen, dtype=torch.int64)
    return drawn.to(dtype=t.dtype, device=t.device)


def fresh_batches(samples: Samples, count: int) -> Named:
    """``count`` batches drawn fresh from the samples' envelope (see the module rules).

    >>> from aitune_fp.effects.inputs.samples import normalise_samples
    >>> s = normalise_samples([torch.tensor([[1, 5, 9]])])
    >>> drawn = fresh_batches(s, 2)
    >>> [name for name, _ in drawn], drawn[0][1].args[0].shape
    (['on fresh draw 0', 'on fresh draw 1'], torch.Size([1, 3]))
    >>> all(1 <= int(v) <= 9 for _, b in drawn for v in b.args[0].flatten())
    True
    """
    gen, pools = torch.Generator().manual_seed(SEED), _pools(samples)
    named: Named = []
    for k in range(count):
        template = samples.items[k % len(samples.items)]
        drawn = [_draw(t, pools[p], gen) for p, t in enumerate(template.flat())]
        n = len(template.args)
        batch = Batch(
            tuple(drawn[:n]), dict(zip(template.kwargs, drawn[n:], strict=True)), template.size
        )
        named.append((f"on fresh draw {k}", batch))
    return named


def _pools(samples: Samples) -> list[torch.Tensor]:
    """Every sample's values of each input (in call order), flattened on the CPU."""
    return [
        torch.cat([item.flat()[p].detach().cpu().reshape(-1) for item in samples.items])
        for p in range(len(samples.items[0].flat()))
    ]


def extra_batches(samples: Samples, template: Batch, rows: int, start: int) -> Named:
    """Batches shaped like ``template`` holding at least ``rows`` rows drawn fresh, the
    first being extra batch ``start`` (see the module rules).

    >>> from aitune_fp.effects.inputs.samples import normalise_samples
    >>> s = normalise_samples([torch.tensor([[1, 5, 9]])])
    >>> drawn = extra_batches(s, s.items[0], 2, 3)
    >>> [name for name, _ in drawn], sum(b.size for _, b in drawn)
    (['on extra draw 3', 'on extra draw 4'], 2)
    """
    pools, per = _pools(samples), template.size
    named: Named = []
    for k in range(start, start + -(-rows // per)):
        gen = torch.Generator().manual_seed(SEED + 1 + k)
        named.append((f"on extra draw {k}", template.with_tensors(_drawer(pools, gen))))
    return named


def _drawer(
    pools: Sequence[torch.Tensor], gen: torch.Generator
) -> Callable[[str, torch.Tensor], torch.Tensor]:
    """Draws each tensor input in turn (call order) from its input's pool."""
    position = iter(range(len(pools)))
    return lambda _name, t: _draw(t, pools[next(position)], gen)


def judged_batches(samples: Samples) -> tuple[RowSplit, Named, Named]:
    """The split, then the named batches of the seen part and of the held-out part."""
    split = split_rows(samples.rows)
    seen = [(_name(samples, i, b, "seen"), b) for i, b in _rows_by_sample(samples, split.seen)]
    if split.fresh:
        return split, seen, fresh_batches(samples, split.fresh)
    held = _rows_by_sample(samples, split.held_out)
    return split, seen, [(_name(samples, i, b, "held-out"), b) for i, b in held]


def _name(samples: Samples, index: int, batch: Batch, part: str) -> str:
    """A part's batch of one sample: named as the sample itself when it holds all of it
    (validation then checks it once)."""
    whole = batch.size == samples.items[index].size
    return f"on sample {index}" if whole else f"on sample {index}'s {part} rows"
