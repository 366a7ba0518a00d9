"""Before anything is built: eager must run one row, and the largest batch size it runs at.

Rules:
- with isolation, the eager check and the max-batch sweep run in one worker
  (:func:`~aitune_fp.effects.isolation.isolated_max_batch`), every call under the call
  timeout: a crash or a hang at batch size ``s`` ends the sweep at the batch size before
  it, and at one row (nothing ran) the tune is a ``TuneError``; without isolation both
  run in this process (a crash or a hang then ends the process, as ``--no-isolation``
  says);
- the sweep's cap is the smaller of the user's ``max_batch_size`` and the plan's; a plan
  without batching profiles batch size 1 and sweeps nothing;
- the result is the max batch size and how the sweep stopped
  (:class:`~aitune_fp.core.record.max_batch.MaxBatchSearch`), which the run record keeps
  and the console and the report show in one line ("max batch size 2: eager crashed at
  batch size 4 (SIGSEGV)"); a fault is also a warning on the ``aitune_fp`` logger;
- with a cache folder, a result found earlier under the same keys is reused instead of
  sweeping, and a new one is stored (:mod:`aitune_fp.shell.batch_cache`);
- when the sweep ended on a fault (a batch size that raised, crashed or hung), the user's
  samples are cut to pieces of at most the max batch size (:func:`inside`), so nothing
  built from one sample calls the model at a faulty size.
"""

from __future__ import annotations

import logging
from pathlib import Path

import torch
from returns.result import Failure, Result, Success

from aitune_fp.core.record.max_batch import MaxBatchSearch, max_batch_line
from aitune_fp.core.records import TuneError
from aitune_fp.core.strategy import ProfilingPlan
from aitune_fp.effects.checks.precheck import eager_check
from aitune_fp.effects.inputs.rows import split_samples
from aitune_fp.effects.inputs.samples import Samples
from aitune_fp.effects.isolation import Timeouts, isolated_max_batch
from aitune_fp.effects.measure.max_batch import UNBATCHED, MaxBatchResult, find_max_batch_size
from aitune_fp.shell.batch_cache import load, store, sweep_keys

log = logging.getLogger("aitune_fp")


def _swept(
    module: torch.nn.Module,
    samples: Samples,
    device: torch.device,
    plan: ProfilingPlan,
    limit: int | None,
    *,
    isolation: bool,
    timeouts: Timeouts,
) -> MaxBatchResult | TuneError:
    """Eager's one-row check and the sweep up to ``limit``, in a worker with ``isolation``."""
    if isolation:
        return isolated_max_batch(module, samples, device, limit, timeouts, sweep=plan.batching)
    return eager_check(module, samples) or (
        find_max_batch_size(module, samples, device, cap=limit)
        if plan.batching
        else MaxBatchResult(1, UNBATCHED, "unbatched")
    )


def _limit(cap: int | None, plan: ProfilingPlan) -> int | None:
    """The sweep's cap: the smaller of the user's and the plan's (``None``: neither).

    >>> _limit(None, ProfilingPlan()), _limit(8, ProfilingPlan(max_batch_size=4))
    (None, 4)
    """
    caps = [x for x in (cap, plan.max_batch_size) if x is not None]
    return min(caps) if caps else None


def search_max_batch(
    module: torch.nn.Module,
    samples: Samples,
    device: torch.device,
    plan: ProfilingPlan,
    cap: int | None,
    *,
    isolation: bool,
    timeouts: Timeouts,
    cache: Path | None = None,
) -> Result[tuple[int, MaxBatchSearch], TuneError]:
    """The max batch size and how the sweep stopped (or the earlier sweep's, from
    ``cache``), or why eager cannot be tuned.

    >>> import tempfile
    >>> from aitune_fp.effects.inputs.samples import normalise_samples
    >>> linear, cpu, cache = torch.nn.Linear(3, 2), torch.device("cpu"), Path(tempfile.mkdtemp())
    >>> samples, plan = normalise_samples([torch.zeros(2, 3)]), ProfilingPlan(max_batch_size=4)
    >>> def search(module, cap=None):
    ...     return search_max_batch(module, samples, cpu, plan, cap, isolation=False,
    ...                             timeouts=Timeouts(), cache=cache)
    >>> largest, how = search(linear).unwrap()
    >>> largest, how.stop, how.reused_from is None
    (4, 'cap', True)
    >>> search(linear).unwrap()[1].reused_from is not None  # the same keys: the cached sweep
    True
    >>> search(linear, cap=2).unwrap()[:1]  # the smaller cap wins, and it is swept again
    (2,)
    >>> search(torch.nn.Linear(4, 2)).failure().message[:58]
    'the eager module cannot run the first batch built from the'
    """
    limit = _limit(cap, plan)
    keys = None
    if cache is not None:
        keys = sweep_keys(
            module, samples, device, plan, limit, isolation=isolation, timeouts=timeouts
        )
        hit = load(cache, keys)
        if hit is not None:
            log.info("%s", max_batch_line(*hit))
            return Success(hit)
    found = _swept(module, samples, device, plan, limit, isolation=isolation, timeouts=timeouts)
    if isinstance(found, TuneError):
        return Failure(found)
    search = MaxBatchSearch(found.stop, found.reason, found.failed_at)
    if cache is not None and keys is not None:
        store(cache, keys, found.max_batch_size, search)
    line = max_batch_line(found.max_batch_size, search)
    (log.warning if found.stop in ("crashed", "hung") else log.info)("%s", line)
    return Success((found.max_batch_size, search))


def inside(samples: Samples, largest: int, search: MaxBatchSearch) -> Samples:
    """The samples to tune with: cut to ``largest`` rows when the sweep ended on a fault.

    >>> from aitune_fp.effects.inputs.samples import normalise_samples
    >>> samples = normalise_samples([torch.zeros(4, 3)])
    >>> inside(samples, 2, MaxBatchSearch("cap", "every size ran")) is samples
    True
    >>> cut = inside(samples, 2, MaxBatchSearch("crashed", "SIGSEGV", failed_at=4))
    >>> cut.rows, [item.args[0].shape[0] for item in cut.items]
    (4, [2, 2])
    """
    if search.failed_at is None:
        return samples
    return split_samples(samples, largest)
