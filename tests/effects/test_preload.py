"""Preloading the backends' libraries: what is imported, what is skipped, nothing raises."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest
import torch

from aitune_fp.effects.backends.registry import default_backends
from aitune_fp.effects.preload import libraries_of, preload

CPU = torch.device("cpu")


@dataclass(frozen=True)
class Listing:
    """A config-like object listing ``libraries`` and saying whether it can run."""

    libraries: tuple[str, ...]
    reason: str | None = None

    def unavailable_reason(self, device: torch.device) -> str | None:
        """``reason``, whatever the device."""
        return self.reason


def test_a_runnable_configs_libraries_are_imported_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A listed module not loaded yet is imported and reported; a second call loads nothing."""
    (tmp_path / "aitune_preload_probe.py").write_text("LOADED = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "aitune_preload_probe", raising=False)
    config = Listing(("aitune_preload_probe",))
    assert preload([config, config], CPU) == ("aitune_preload_probe",)
    assert "aitune_preload_probe" in sys.modules
    assert preload([config], CPU) == ()


def test_unavailable_missing_and_broken_libraries_are_skipped(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An unavailable config's libraries, a missing module and one that raises are all skipped."""
    (tmp_path / "aitune_preload_broken.py").write_text("raise RuntimeError('broken SDK')\n")
    (tmp_path / "aitune_preload_unwanted.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("aitune_preload_broken", "aitune_preload_unwanted"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    configs = [
        Listing(("aitune_preload_unwanted",), reason="needs a CUDA device"),
        Listing(("no_such_module_aitune", "aitune_preload_broken")),
    ]
    assert preload(configs, CPU) == ()
    assert "aitune_preload_unwanted" not in sys.modules


class NotATuple:
    """A config whose ``libraries`` attribute has the wrong type."""

    libraries: ClassVar[list[str]] = ["json"]


def test_only_a_tuple_of_names_counts_as_a_library_list() -> None:
    """A malformed ``libraries`` attribute is ignored rather than trusted."""
    assert libraries_of(NotATuple()) == ()
    assert libraries_of(object()) == ()


def test_every_shipped_backend_lists_importable_names() -> None:
    """Each shipped backend's libraries are dotted module names; eager needs none."""
    from aitune_fp.effects.backends.eager import TorchEager

    listed = {b.name: libraries_of(b) for b in default_backends("cuda")}
    assert libraries_of(TorchEager()) == ()
    assert listed and all(listed.values())
    for names in listed.values():
        assert all(n and all(part.isidentifier() for part in n.split(".")) for n in names)
