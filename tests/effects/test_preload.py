"""Preloading the backends' libraries: what is imported, what is skipped, nothing raises."""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest
import torch

from aitune_fp.effects.backends.base import Backend, ConfigIdentity, Declaration
from aitune_fp.effects.backends.registry import default_backends
from aitune_fp.effects.machine.preload import libraries_of, preload, preload_in_background

CPU = torch.device("cpu")


def Listing(libraries: tuple[str, ...], reason: str | None = None) -> Backend:
    """A config whose declaration lists ``libraries`` and that can run unless ``reason``."""

    @dataclass(frozen=True, slots=True)
    class Listed(ConfigIdentity):
        declaration: ClassVar[Declaration] = Declaration(libraries=libraries)
        name: str = "listed"

        def unavailable_reason(self, device: torch.device) -> str | None:
            """``reason``, whatever the device."""
            return reason

        def build(self, *_: object) -> Any:
            """Never built here."""
            raise AssertionError("not built in these tests")

    return Listed()  # type: ignore[return-value]


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


def test_the_workers_server_is_given_the_libraries_but_the_declared_skips() -> None:
    """libraries_of leaves out what a declaration says a fork server must not import."""
    from aitune_fp.effects.backends.torch_trt import TorchTensorRT
    from aitune_fp.effects.backends.trt import TensorRT

    assert "tensorrt" not in libraries_of(TensorRT())
    assert "torch_tensorrt" not in libraries_of(TorchTensorRT())
    assert "tensorrt" in TensorRT.declaration.libraries


def test_every_shipped_backend_lists_importable_names() -> None:
    """Each shipped backend's libraries are dotted module names; eager needs none."""
    from aitune_fp.effects.backends.eager import TorchEager

    listed = {b.name: libraries_of(b) for b in default_backends("cuda")}
    assert libraries_of(TorchEager()) == ()
    assert listed and all(listed.values())
    for names in listed.values():
        assert all(n and all(part.isidentifier() for part in n.split(".")) for n in names)


def test_inductor_libraries_run_the_vector_isa_probe_and_others_do_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The ISA probe runs exactly when an Inductor library is listed by a runnable config."""
    import aitune_fp.effects.machine.preload as module

    calls: list[int] = []
    monkeypatch.setattr(module, "probe_vector_isa", lambda: calls.append(1))
    preload([Listing(("json",))], CPU)
    assert calls == []
    preload([Listing(("torch._inductor.compile_fx",), reason="needs a CUDA device")], CPU)
    assert calls == []
    preload([Listing(("torch._inductor.compile_fx",))], CPU)
    assert calls == [1]


def test_the_probe_leaves_torchs_answer_cached_in_the_process() -> None:
    """After the probe, Inductor's ISA list is served from torch's per-process cache."""
    from torch._inductor import cpu_vec_isa

    from aitune_fp.effects.machine.preload import probe_vector_isa

    probe_vector_isa()
    assert cpu_vec_isa.valid_vec_isa_list.cache_info().currsize == 1


def test_the_isas_probed_at_once_give_torchs_own_answers() -> None:
    """Each vector ISA probed at once (one thread each) gets the answer torch's own
    dry-compile and load of that ISA gives."""
    from torch._inductor import cpu_vec_isa

    from aitune_fp.effects.machine.preload import _probe_each_at_once

    _probe_each_at_once(cpu_vec_isa)
    flags = cpu_vec_isa.x86_isa_checker()
    isas = [i for i in cpu_vec_isa.supported_vec_isa_list
            if all(f in flags for f in str(i).split())]  # fmt: skip
    assert [bool(i) for i in isas] == [i.check_build(i._avx_code) for i in isas]


def test_a_started_probe_imports_in_the_callers_thread_and_leaves_no_thread() -> None:
    """The modules the probe imports are loaded before its thread starts (two threads never
    import Inductor at once), and once joined the probe leaves no thread behind."""
    from aitune_fp.effects.machine.preload import PROBE_IMPORTS, probe_started

    thread = probe_started()
    assert all(name in sys.modules for name in PROBE_IMPORTS)
    thread.join(timeout=120)
    assert not thread.is_alive()
    assert not [t for t in threading.enumerate() if t.name.startswith("aitune_fp-isa")]


def test_a_background_preload_imports_in_a_daemon_thread(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The background preload imports the listed module by the time it is joined."""
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "aitune_preload_later.py").write_text("LOADED = True\n")
    monkeypatch.delitem(sys.modules, "aitune_preload_later", raising=False)
    thread = preload_in_background([Listing(("aitune_preload_later",))], CPU)
    assert thread.daemon
    thread.join(timeout=60)
    assert not thread.is_alive() and "aitune_preload_later" in sys.modules
