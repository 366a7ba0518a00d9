"""Before anything is built: the eager module must run the first batch built from the samples.

Rule: :func:`eager_check` runs the module once on a batch of one row built from the
samples (what every backend's build starts from); when it raises, the tune is a
``TuneError`` showing the shapes built, the module's own error and the likely fix (add a
batch axis or pass un-batched items with ``batched=False`` / ``--unbatched``), instead of
every backend failing on its own with "no correct backend found".
"""

from __future__ import annotations

import torch

from aitune_fp.core.records import TuneError
from aitune_fp.effects.inputs.samples import Batch, Samples, make_batch


def _fix(samples: Samples) -> str:
    axis = samples.spec.batch_axis
    if samples.batched:
        return (
            f"each sample must carry the batch axis (axis {axis}); if the samples are single "
            "items without it (as a dataset hands them out), pass batched=False "
            "(CLI: --unbatched), or add the axis yourself (x.unsqueeze(0))"
        )
    return (
        f"the items were collated with a new batch axis {axis}; if they already carry a "
        "batch axis, leave batched=True (the default); otherwise make the items match what "
        "the module takes"
    )


def eager_check(module: torch.nn.Module, samples: Samples) -> TuneError | None:
    """``None`` when eager runs the first built batch, else the error explaining why not.

    >>> from aitune_fp.effects.inputs.samples import normalise_samples
    >>> items = normalise_samples([torch.zeros(4)] * 8)  # items read as 4-row batches
    >>> print(eager_check(torch.nn.Linear(4, 2), items).message)  # doctest: +ELLIPSIS
    the eager module cannot run the first batch built from the samples (input_0 (1,) float32; \
8 samples, sample 0: input_0 (4,) float32, batched): RuntimeError: ... Likely fix: each \
sample must carry the batch axis (axis 0); ... pass batched=False (CLI: --unbatched), ...
    """
    batch = make_batch(samples, 1)
    try:
        with torch.inference_mode():
            batch.call(module)
    except Exception as error:
        return _cannot_run(samples, batch, error)
    return None


def _cannot_run(samples: Samples, batch: Batch, error: Exception) -> TuneError:
    """The error of eager failing on ``batch``: the batch's and the first sample's shapes,
    the samples' convention, the error's first line and the likely fix."""
    first = str(error).strip().splitlines()[0] if str(error).strip() else ""
    sample = samples.items[0]
    if not samples.batched:
        sample = make_batch(samples, 1)
    shown = sample.shapes() if samples.batched else f"{sample.shapes()} after collating"
    convention = "batched" if samples.batched else "un-batched items"
    return TuneError(
        f"the eager module cannot run the first batch built from the samples "
        f"({batch.shapes()}; {len(samples.items)} samples, sample 0: {shown}, "
        f"{convention}): {type(error).__name__}: {first}. Likely fix: {_fix(samples)}"
    )
