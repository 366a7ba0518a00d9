"""The samples' seen and held-out parts, the fresh draws, and validation's verdict on them."""

from __future__ import annotations

from pathlib import Path

import torch
from returns.io import IOResult, IOSuccess
from returns.unsafe import unsafe_perform_io
from torch import nn

from aitune_fp.core.records import BackendFailure
from aitune_fp.effects.backends.base import Backend, Built
from aitune_fp.effects.checks.accuracy import error_figures
from aitune_fp.effects.checks.held_out import fresh_batches, judged_batches, seen_samples
from aitune_fp.effects.checks.validate import ValidationReport, validate
from aitune_fp.effects.inputs.samples import Samples, normalise_samples
from tests.shell.fakes import FakeBackend, SeenOnlyFake

CPU = torch.device("cpu")


def _rows(n: int, start: int = 0) -> torch.Tensor:
    return torch.arange(start, start + n, dtype=torch.float32).reshape(n, 1).repeat(1, 4)


def test_seen_rows_alternate_across_samples_and_keep_shape_groups() -> None:
    """Rows are numbered across samples: with 3 + 2 rows the seen ones are 0, 2, 4, the
    held-out ones 1, 3, each sample keeping its rows of the part in order."""
    samples = normalise_samples([_rows(3), _rows(2, 3)])
    seen = seen_samples(samples)
    assert [b.args[0][:, 0].tolist() for b in seen.items] == [[0.0, 2.0], [4.0]]
    assert seen.rows == 3 and seen.shape_groups() == ((0, 1),)
    split, seen_named, held = judged_batches(samples)
    assert split.held_out == (1, 3) and not split.fresh
    assert [b.args[0][:, 0].tolist() for _, b in held] == [[1.0], [3.0]]
    names = [name for name, _ in seen_named]
    assert names == ["on sample 0's seen rows", "on sample 1's seen rows"]


def test_fresh_draws_stay_in_the_samples_envelope_and_repeat() -> None:
    """Too few rows: fresh batches shaped like the samples, same dtypes, integers within
    the observed range, bool inputs as often true as observed, floats new; the same
    samples give the same draws."""
    ids = torch.tensor([[3, 7, 12, 5]])
    x = torch.randn(1, 4, 6)
    mask = torch.tensor([[True, True, True, True]])
    samples = normalise_samples([{"ids": ids, "x": x, "mask": mask}])
    split, _, held = judged_batches(samples)
    assert split.fresh == len(held) == 4
    for _, b in held:
        assert b.kwargs["ids"].shape == ids.shape and b.kwargs["ids"].dtype == ids.dtype
        assert int(b.kwargs["ids"].min()) >= 3 and int(b.kwargs["ids"].max()) <= 12
        assert b.kwargs["x"].shape == x.shape and not torch.equal(b.kwargs["x"], x)
        assert bool(b.kwargs["mask"].all())
    again = fresh_batches(samples, 4)
    pairs = zip(held, again, strict=True)
    assert all(torch.equal(a.kwargs["x"], b.kwargs["x"]) for (_, a), (_, b) in pairs)


def _report(
    backend: Backend, samples: Samples, tmp: Path
) -> IOResult[ValidationReport, BackendFailure]:
    module = nn.Linear(4, 3).eval()
    built: Built = unsafe_perform_io(backend.build(module, samples, CPU, tmp).unwrap())
    return validate("candidate", built, module, samples, CPU)


def test_a_candidate_exact_only_where_it_calibrated_is_refused(tmp_path: Path) -> None:
    """Exact on the seen rows, 1.5× off elsewhere: validation refuses it on the held-out
    rows, and the refusal shows the seen rows' perfect figures beside it."""
    torch.manual_seed(0)
    samples = normalise_samples([torch.randn(8, 4)])
    result = _report(SeenOnlyFake(), samples, tmp_path)
    assert not isinstance(result, IOSuccess)
    message = unsafe_perform_io(result.failure()).message
    assert "4 seen rows, 4 held-out rows" in message and "seen rows: rel RMS 0," in message


def test_a_candidate_exact_everywhere_records_both_parts(tmp_path: Path) -> None:
    """A faithful candidate's report holds the held-out figures (plain and prefixed), the
    seen ones, and the sizes of both parts; with one row the held-out part is fresh."""
    torch.manual_seed(0)
    for rows, fresh in ((8, 0.0), (1, 1.0)):
        result = _report(FakeBackend(), normalise_samples([torch.randn(rows, 4)]), tmp_path)
        figures = unsafe_perform_io(result.unwrap()).as_dict()
        assert figures["held_out_fresh"] == fresh
        assert figures["held_out/rms_rel_error"] == figures["rms_rel_error"] == 0.0
        assert figures["seen/rms_rel_error"] == 0.0
        assert figures["seen_rows"] == (4.0 if rows == 8 else 1.0)
        assert figures["held_out_rows"] == 4.0


def test_a_two_axis_output_named_as_features_has_no_class_axis() -> None:
    """``pooler_output`` (batch, n) gets the row cosine the feature floors read and no top-1;
    ``logits`` of the same shape keeps top-1 and gets no row cosine."""
    ref = torch.tensor([[1.0, 2.0, 3.0], [3.0, 1.0, 0.5]])
    got = ref + torch.tensor([[0.0, 0.0, 0.1], [0.0, 0.0, 0.0]])
    pooled = error_figures([("output['pooler_output']", got, ref)])
    logits = error_figures([("output['logits']", got, ref)])
    assert "top1_agreement" not in pooled and 0.999 < pooled["row_cosine"] < 1.0
    assert logits["top1_agreement"] == 1.0 and "row_cosine" not in logits
