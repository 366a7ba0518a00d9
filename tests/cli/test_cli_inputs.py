"""``tune --unbatched`` and ``--dynamic``: options reach the tune; bad specs are usage errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from aitune_fp.cli.main import main
from aitune_fp.core.record.run_record import loads

MODEL = """
import torch

class Pooled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(4, 2)

    def forward(self, x):
        return self.lin(x.mean(dim=1))

def items():
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(16, 4))
    return mlp, [torch.randn(16) for _ in range(8)]

def lengths():
    return Pooled(), [torch.randn(2, n, 4) for n in (5, 7)]
"""


def _tune(tmp_path: Path, factory: str, *extra: str) -> int:
    path = tmp_path / "model.py"
    path.write_text(MODEL)
    return main(
        [
            "tune",
            f"{path}:{factory}",
            "--backends",
            "eager",
            "--max-batch-size",
            "2",
            "--no-plot",
            "--out",
            str(tmp_path / "out"),
            "--cache-dir",
            str(tmp_path / "cache"),
            *extra,
        ]
    )


def test_unbatched_items_tune_with_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--unbatched collates the factory's items; without it the error names the flag."""
    assert _tune(tmp_path, "items", "--unbatched") == 0
    assert loads((tmp_path / "out" / "run.json").read_text()).input_spec["batched"] is False
    capsys.readouterr()
    assert _tune(tmp_path, "items") == 1
    assert "--unbatched" in capsys.readouterr().err


def test_dynamic_axes_reach_the_record(tmp_path: Path) -> None:
    """--dynamic declares the axis and range; the run record stores them."""
    assert _tune(tmp_path, "lengths", "--dynamic", "0:1=3..12") == 0
    (axis,) = loads((tmp_path / "out" / "run.json").read_text()).input_spec["dynamic"]
    assert (axis["axis"], axis["min"], axis["max"], axis["inferred"]) == (1, 3, 12, False)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("input_ids", "INPUT:AXIS=MIN..MAX"),
        ("ids:1=8-64", "is not AXIS=MIN..MAX"),
        ("ids:1=64..8", "1 <= MIN <= MAX"),
        ("ids:1=1..4,1=2..3", "given twice"),
        ("bad name:1=1..4", "INPUT:AXIS=MIN..MAX"),
    ],
)
def test_bad_dynamic_specs_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: str, message: str
) -> None:
    """A malformed --dynamic is argparse's usage error (exit 2) with the syntax shown."""
    with pytest.raises(SystemExit) as exit_info:
        _tune(tmp_path, "lengths", "--dynamic", spec)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_a_range_not_holding_the_samples_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A well-formed range that does not hold the samples ends with exit 1 naming it."""
    assert _tune(tmp_path, "lengths", "--dynamic", "0:1=8..12") == 1
    assert "does not hold the samples' sizes [5, 7]" in capsys.readouterr().err
