"""User samples cut to the rows the model is known to survive.

Rule: :func:`split_samples` splits every sample of more than ``largest`` rows into pieces
of at most ``largest`` rows along the batch axis, in order, each piece keeping its
sample's shape group; the spec, the rows and their order stay the same. The tune does
this when the max-batch sweep ended on a fault (a size that raised, crashed or hung), so
that no call built from one user sample (the warm-up, the eager build's first call,
validation on each sample) is made at a batch size the sweep found faulty.
"""

from __future__ import annotations

from aitune_fp.effects.inputs.samples import Batch, Samples


def _piece(batch: Batch, axis: int, start: int, rows: int) -> Batch:
    return batch.with_tensors(lambda _, t: t.narrow(axis, start, rows).contiguous(), rows)


def split_samples(samples: Samples, largest: int) -> Samples:
    """``samples`` with no sample over ``largest`` rows (see the rules).

    >>> import torch
    >>> from aitune_fp.effects.inputs.samples import normalise_samples
    >>> s = split_samples(normalise_samples([torch.arange(5.0).reshape(5, 1)]), 2)
    >>> [b.args[0].flatten().tolist() for b in s.items], s.rows
    ([[0.0, 1.0], [2.0, 3.0], [4.0]], 5)
    """
    if largest < 1:
        raise ValueError(f"largest must be >= 1, got {largest}")
    if all(b.size <= largest for b in samples.items):
        return samples
    axis = samples.spec.batch_axis
    items: list[Batch] = []
    pieces: dict[int, list[int]] = {}
    for i, batch in enumerate(samples.items):
        for start in range(0, batch.size, largest):
            pieces.setdefault(i, []).append(len(items))
            items.append(_piece(batch, axis, start, min(largest, batch.size - start)))
    groups = tuple(tuple(p for i in g for p in pieces[i]) for g in samples.shape_groups())
    return Samples(samples.spec, tuple(items), groups, samples.batched)
