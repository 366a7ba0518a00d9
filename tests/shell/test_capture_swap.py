"""Tests for capture (recording a submodule's inputs) and swap (path-copying replacement)."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch import nn

import aitune_fp
from aitune_fp.effects.inputs.samples import Call, normalise_samples
from aitune_fp.shell.capture import capture
from aitune_fp.shell.swap import swap


class Encoder(nn.Module):
    """A keyword-taking encoder (a text encoder's call convention)."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None = None, scale: float | None = None
    ) -> torch.Tensor:
        """Project, mask and scale."""
        out = self.proj(x) * (1.0 if scale is None else scale)
        return out if mask is None else out * mask.unsqueeze(-1)


class PassThrough(nn.Module):
    """A replacement with the encoder's call convention that returns its input."""

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None = None, scale: None = None
    ) -> torch.Tensor:
        """Return ``x``."""
        return x


class Pipeline(nn.Module):
    """A pipeline holding an encoder inside a block, plus a head."""

    def __init__(self) -> None:
        super().__init__()
        self.block = nn.ModuleDict({"encoder": Encoder()})
        self.head = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Encode with a mask, then the head."""
        mask = torch.ones(x.shape[:-1])
        return self.head(self.block["encoder"](x, mask=mask, scale=None))


def test_pinned_names_are_exported() -> None:
    """capture and swap are reachable as aitune_fp.capture and aitune_fp.swap."""
    assert aitune_fp.capture is capture and aitune_fp.swap is swap


def test_capture_records_the_calls_a_submodule_receives() -> None:
    """The recorded samples are the submodule's real inputs, keywords kept, None dropped."""
    pipe = Pipeline().eval()
    xs = [torch.randn(2, 3, 4), torch.randn(1, 5, 4)]
    with capture(pipe.block["encoder"], limit=8) as captured:
        outs = [pipe(x) for x in xs]
    assert captured.batched and len(captured.samples) == 2
    first = captured.samples[0]
    assert isinstance(first, Call) and set(first.kwargs) == {"mask"}
    assert torch.equal(first.args[0], xs[0])
    assert all(torch.equal(o, pipe(x)) for o, x in zip(outs, xs, strict=True))
    assert not pipe.block["encoder"]._forward_pre_hooks  # the hook is gone


def test_capture_copies_so_later_changes_do_not_leak() -> None:
    """An in-place change to an input after the call does not alter the recorded sample."""
    lin = nn.Linear(3, 3)
    x = torch.zeros(1, 3)
    with capture(lin) as captured:
        lin(x)
    x += 1
    assert captured.samples[0].sum().item() == 0.0


def test_capture_is_bounded_by_count_and_memory() -> None:
    """Recording stops at the count limit or the byte budget; the rest is counted as skipped."""
    lin = nn.Linear(256, 1)
    with capture(lin, limit=3) as by_count:
        for _ in range(5):
            lin(torch.zeros(1, 256))
    with capture(lin, max_bytes=256 * 4 * 2) as by_bytes:
        for _ in range(5):
            lin(torch.zeros(1, 256))
    assert (len(by_count.samples), by_count.skipped) == (3, 2)
    assert (len(by_bytes.samples), by_bytes.skipped) == (2, 3)


def test_capture_reports_items_when_inputs_disagree_on_axis_0() -> None:
    """Calls whose tensors disagree on their leading size are items, not batches."""
    bil = nn.Bilinear(3, 5, 2)
    with capture(bil) as captured:
        bil(torch.zeros(3), torch.zeros(5))
    assert not captured.batched


def test_capture_removes_its_hook_when_the_block_raises() -> None:
    """The hook is removed even when the user's pipeline raises inside the block."""
    lin = nn.Linear(2, 2)
    with pytest.raises(RuntimeError), capture(lin):
        lin(torch.zeros(1, 3))
    assert not lin._forward_pre_hooks


def test_swap_replaces_by_path_and_leaves_the_root_untouched() -> None:
    """The new root runs the replacement; the original root still holds its own module."""
    pipe = Pipeline().eval()
    x = torch.randn(2, 3, 4)
    before = pipe(x)
    new = swap(pipe, "block.encoder", PassThrough())
    assert isinstance(new.block["encoder"], PassThrough)
    assert isinstance(pipe.block["encoder"], Encoder)
    torch.testing.assert_close(pipe(x), before)
    torch.testing.assert_close(new(x), pipe.head(x))


def test_swap_copies_only_the_path_and_shares_weights() -> None:
    """Objects off the path are shared; along it, copies own their tables."""
    pipe = Pipeline()
    new = swap(pipe, "block.encoder", nn.Identity())
    assert new is not pipe and new.block is not pipe.block
    assert new.head is pipe.head and new.head.weight is pipe.head.weight
    new.register_buffer("extra", torch.zeros(1))
    assert "extra" not in dict(pipe.named_buffers())


def test_swap_walks_plain_objects_lists_and_frozen_dataclasses() -> None:
    """Plain objects, lists and frozen dataclasses along the path are copied, not mutated."""

    @dataclasses.dataclass(frozen=True)
    class Holder:
        parts: list[nn.Module]

    class App:
        def __init__(self) -> None:
            self.holder = Holder([nn.ReLU(), nn.Tanh()])

    app = App()
    new = swap(app, "holder.parts.1", nn.Identity())
    assert isinstance(new.holder.parts[1], nn.Identity)
    assert isinstance(app.holder.parts[1], nn.Tanh) and new.holder.parts[0] is app.holder.parts[0]


@pytest.mark.parametrize(
    ("path", "match"),
    [("block.nope", "no attribute 'nope'"), ("", "dotted names"), ("a..b", "dotted")],
)
def test_swap_refuses_paths_that_do_not_exist(path: str, match: str) -> None:
    """A path step that does not exist is a ValueError naming it."""
    with pytest.raises(ValueError, match=match):
        swap(Pipeline(), path, nn.Identity())


def test_mixed_calls_are_samples_with_positional_and_keyword_inputs() -> None:
    """A captured mixed call normalises to one positional and one keyword input."""
    pipe = Pipeline().eval()
    with capture(pipe.block["encoder"]) as captured:
        pipe(torch.randn(2, 3, 4))
    spec = normalise_samples(captured.samples).spec
    assert (spec.positional, spec.keywords) == (("input_0",), ("mask",))
