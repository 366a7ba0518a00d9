"""Reduced-precision verdicts taken on enough held-out rows, through validation."""

from __future__ import annotations

from collections.abc import Callable

import torch
from returns.io import IOResult, IOSuccess
from returns.unsafe import unsafe_perform_io
from torch import nn

from aitune_fp.core.accuracy.bounds import agreement_lower
from aitune_fp.core.accuracy.evidence import MAX_HELD_OUT_ROWS
from aitune_fp.core.records import BackendFailure
from aitune_fp.effects.backends.base import Built
from aitune_fp.effects.checks.validate import ValidationReport, validate
from aitune_fp.effects.inputs.samples import Samples, normalise_samples

CPU = torch.device("cpu")


def _classifier() -> nn.Module:
    """A small classifier whose logits keep clear margins (eight classes)."""
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8)).eval()


def _samples() -> Samples:
    """Sixteen single-row samples: eight held out."""
    g = torch.Generator().manual_seed(1)
    return normalise_samples([torch.randn(1, 16, generator=g) for _ in range(16)])


def _flipping(module: nn.Module, every: int) -> Callable[[torch.Tensor], torch.Tensor]:
    """A runner equal to the module but whose prediction moves to another class on rows
    whose first input is in the top ``1/every`` of its range (``every`` 0: never)."""

    def run(x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = module(x).clone()
        if every:
            flip = x[:, 0] > torch.quantile(torch.randn(4096, generator=_gen()), 1 - 1 / every)
            top = out.argmax(-1)
            out[flip, (top[flip] + 1) % 8] = out[flip].max(-1).values + 1.0
        return out

    return run


def _gen() -> torch.Generator:
    return torch.Generator().manual_seed(5)


def _validate(
    runner: Callable[[torch.Tensor], torch.Tensor], precision: str
) -> IOResult[ValidationReport, BackendFailure]:
    module = _classifier()
    built = Built(runner, info={"precision": precision})
    return validate("candidate", built, module, _samples(), CPU)


def test_an_agreeing_int8_candidate_draws_rows_until_its_bound_shows_the_rule() -> None:
    """Eight agreeing held-out rows cannot show 99 %; rows are drawn until the 95 % lower
    bound reaches it, and the record says how many rows it rests on."""
    module = _classifier()
    result = _validate(_flipping(module, 0), "int8")
    assert isinstance(result, IOSuccess)
    figures = unsafe_perform_io(result.unwrap()).figures
    rows = int(figures["judged_rows"])
    assert figures["held_out_rows"] == 8 and figures["held_out_drawn"] == rows - 8
    assert 299 <= rows <= MAX_HELD_OUT_ROWS
    assert figures["top1_agreement_lower"] == agreement_lower(rows, rows) >= 0.99
    assert figures["top1_agreement_lower"] <= figures["top1_agreement"]


def test_an_int8_candidate_flipping_some_rows_is_refused_with_its_evidence() -> None:
    """A candidate that moves about 3 % of predictions is refused on its bound, the reason
    naming the bound and the rows it was taken on."""
    module = _classifier()
    result = _validate(_flipping(module, 30), "int8")
    assert not isinstance(result, IOSuccess)
    message = unsafe_perform_io(result.failure()).message
    assert "lower bound" in message and "observed on" in message


def test_a_full_precision_candidate_draws_no_rows() -> None:
    """An fp32 candidate keeps its element-wise check: no bound, no extra rows."""
    module = _classifier()
    result = _validate(_flipping(module, 0), "float32")
    assert isinstance(result, IOSuccess)
    figures = unsafe_perform_io(result.unwrap()).figures
    assert "judged_rows" not in figures and "top1_agreement_lower" not in figures
