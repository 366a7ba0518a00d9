"""``TunedModule``: an ``nn.Module`` whose ``forward`` runs the selected backend.

Rules:
- a call inside the tuned envelope (:mod:`aitune_fp.effects.inputs.envelope`: the structure,
  dtypes and shapes it was tuned and validated for, batches up to ``max_batch_size`` or the
  largest user sample, whichever is larger) runs
  the winner's runner, with only that check on top (a few comparisons per input axis);
- a call outside it never reaches the backend: with ``outside="warn"`` (the default) it
  runs the eager module it was tuned from and warns once per tuned module
  (:class:`OutsideEnvelopeWarning`); with ``outside="raise"`` it raises
  :class:`OutsideEnvelopeError`, as it does when there is no eager module to run (a module
  loaded from an artifact without ``module=``);
- a call whose tensors are not on the device the backend was built for
  (``Built.info["device"]``) raises :class:`OutsideEnvelopeError` naming the input and both
  devices, whatever ``outside`` says (the eager module lives on that device too);
- when eager itself was selected there is no envelope to keep;
- ``.selection`` is the core ``Selection``, ``.backend`` the winner's description,
  ``.record`` the whole run as data. ``close()`` frees the backend's resources.

A tuned module owns the artifact it runs: ``artifact_digest`` is the artifact's size and
sha256 recorded when it was built (``Built.info["artifact_sha256"]``/``"artifact_size"``,
else read at construction), and ``save`` refuses an artifact that no longer matches it.
A folder handed over as ``owned_dir`` (a loaded module's private copy) is removed by
``close()`` or when the module is garbage-collected.
"""

from __future__ import annotations

import shutil
import warnings
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from aitune_fp.core.records import Selection
from aitune_fp.core.report.account import decision_account
from aitune_fp.effects.backends.base import Backend, Built
from aitune_fp.effects.cache.integrity import FileDigest, digest
from aitune_fp.effects.inputs.envelope import Envelope
from aitune_fp.effects.inputs.samples import Samples

if TYPE_CHECKING:
    from aitune_fp.core.record.run_record import RunRecord

OUTSIDE = ("warn", "raise")


@dataclass(frozen=True, slots=True)
class CallLimits:
    """What a tuned module admits: batches up to ``max_batch_size`` (``None``: the
    record's, else the samples' largest) and what a call outside does (``outside``:
    ``"warn"`` runs eager with a warning, ``"raise"`` refuses)."""

    max_batch_size: int | None = None
    outside: str = "warn"


class OutsideEnvelopeWarning(UserWarning):
    """A call outside the tuned envelope ran the eager module instead of the backend."""


class OutsideEnvelopeError(ValueError):
    """A call outside the tuned envelope, refused (``outside="raise"`` or no eager module)."""


class TunedModule(torch.nn.Module):
    """Runs the tuned backend; ``forward(*args, **kwargs)`` takes what the module took."""

    def __init__(
        self,
        built: Built,
        backend_config: Backend,
        selection: Selection,
        samples: Samples,
        record: RunRecord | None = None,
        source: torch.nn.Module | None = None,
        *,
        limits: CallLimits = CallLimits(),
        owned_dir: Path | None = None,
    ) -> None:
        super().__init__()
        if limits.outside not in OUTSIDE:
            raise ValueError(f"outside must be one of {OUTSIDE}, got {limits.outside!r}")
        self.built, self.backend_config, self.selection = built, backend_config, selection
        self.samples, self.record, self.outside = samples, record, limits.outside
        self._runner = built.runner
        self._source = [source]  # a list keeps the user's module out of our parameters
        self.max_batch_size = _largest_batch(limits.max_batch_size, record, samples)
        self.envelope = _envelope(built, backend_config, samples, self.max_batch_size)
        self._admits = self.envelope.admits if self.envelope is not None else None
        self._warned = False
        self.artifact_digest = _built_digest(built)
        self._cleanup = (
            None
            if owned_dir is None
            else weakref.finalize(self, shutil.rmtree, str(owned_dir), True)
        )

    @property
    def backend(self) -> str:
        """The description of the backend that runs this module."""
        return self.selection.backend

    @property
    def source_module(self) -> torch.nn.Module | None:
        """The eager module this was tuned from (used by save to record a recipe)."""
        return self._source[0]

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Run the selected backend, or the eager module for a call outside the envelope."""
        admits = self._admits
        if admits is None or admits(args, kwargs):
            return self._runner(*args, **kwargs)
        return self._outside(args, kwargs)

    def _outside(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        assert self.envelope is not None
        reason = self.envelope.reason(args, kwargs)
        source = self._source[0]
        elsewhere = self.envelope.device_reason(args, kwargs)
        if elsewhere is not None:  # eager lives on the backend's device too: no fallback
            raise OutsideEnvelopeError(f"call on the wrong device for {self.backend}: {elsewhere}")
        if self.outside == "raise" or source is None:
            hint = "" if source is not None else " (no eager module: load(path, module=...))"
            raise OutsideEnvelopeError(
                f"call outside the envelope {self.backend} was tuned for: {reason}{hint}"
            )
        self._warn_once(reason)
        with torch.inference_mode():
            return source(*args, **kwargs)

    def _warn_once(self, reason: str) -> None:
        """Warn, the first time only, that a call ran the eager module instead."""
        if self._warned:
            return
        self._warned = True
        warnings.warn(
            f"call outside the envelope {self.backend} was tuned for ({reason}): running "
            "the eager module instead (warned once; tune with these shapes to cover them)",
            OutsideEnvelopeWarning,
            stacklevel=4,
        )

    def close(self) -> None:
        """Free the backend's resources; the module cannot run afterwards."""
        self.built.close()
        if self._cleanup is not None:
            self._cleanup()

    def extra_repr(self) -> str:
        """The backend and its metric, for ``print(tuned)``: the run's decision account
        (its speedup and where both figures were measured too: the table's selected row
        and the ``Selected``/``Speedup`` lines), else the selection's own result."""
        r = self.selection.result
        account = None if self.record is None else decision_account(self.record)
        head = f"backend={self.backend!r}"
        if account is None:
            return f"{head}, batch_size={r.selected_batch_size}, metric={r.metric:g}"
        shown = account.selected
        speedup = "" if account.speedup is None else f", speedup={account.speedup:.2f}"
        return (
            f"{head}, batch_size={shown.batch_size}, metric={shown.value:g}{speedup}, "
            f"measured_in={shown.source!r}"
        )


def _largest_batch(
    max_batch_size: int | None, record: RunRecord | None, samples: Samples
) -> int | None:
    """The envelope's largest batch: the given one, else the record's, and never below the
    largest user sample (every one was validated too); ``None``: no bound known.

    >>> from aitune_fp.effects.inputs.samples import normalise_samples
    >>> samples = normalise_samples([torch.zeros(3, 2)])
    >>> _largest_batch(None, None, samples), _largest_batch(2, None, samples)
    (None, 3)
    """
    if max_batch_size is None and record is not None:
        max_batch_size = record.max_batch_size
    if max_batch_size is None:
        return None
    return max(max_batch_size, *(b.size for b in samples.items))


def _envelope(
    built: Built, config: Backend, samples: Samples, max_batch_size: int | None
) -> Envelope | None:
    """The inputs the winner was tuned for (``None`` for eager: there is none to keep), on
    the device its runner binds when it says so."""
    if config.name == "eager":
        return None
    device = built.info.get("device")  # set by the runners that bind device addresses
    return Envelope.of(samples.spec, max_batch_size, device if device else None)


def _built_digest(built: Built) -> FileDigest | None:
    """The artifact's digest recorded at build, else read now (``None`` without one)."""
    recorded = built.info.get("artifact_sha256")
    if isinstance(recorded, str) and isinstance(built.info.get("artifact_size"), int):
        return FileDigest(int(built.info["artifact_size"]), recorded)
    if built.artifact is not None and built.artifact.is_file():
        return digest(built.artifact)
    return None
