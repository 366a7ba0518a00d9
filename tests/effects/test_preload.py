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
from aitune_fp.effects.machine.preload import libraries_of, preload

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
    """The ISA probe runs exactly when an Inductor library is listed by a runnable config
    (the list not answered in the process yet)."""
    import aitune_fp.effects.machine.preload as module

    calls: list[int] = []
    monkeypatch.setattr(module, "probe_vector_isa", lambda: calls.append(1))
    monkeypatch.setattr(module, "_probed", lambda: False)
    preload([Listing(("json",))], CPU)
    assert calls == []
    preload([Listing(("torch._inductor.compile_fx",), reason="needs a CUDA device")], CPU)
    assert calls == []
    preload([Listing(("torch._inductor.compile_fx",))], CPU)
    assert calls == [1]


def test_a_probe_answered_in_the_process_is_not_started_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Once the ISA list is answered in this process, a preload of an Inductor library
    (one per runner a tune makes here) starts no probe."""
    import aitune_fp.effects.machine.preload as module

    calls: list[int] = []
    monkeypatch.setattr(module, "probe_vector_isa", lambda: calls.append(1))
    monkeypatch.setattr(module, "_probed", lambda: True)
    preload([Listing(("torch._inductor.compile_fx",))], CPU)
    assert calls == []


def test_after_the_probe_the_isa_list_reads_as_answered() -> None:
    """The real probe leaves Inductor's ISA list answered in the process (served or cached),
    which is what keeps later preloads from starting it again."""
    from aitune_fp.effects.machine.preload import _probed, probe_vector_isa

    probe_vector_isa()
    assert _probed()


FIRST_VALID_CHILD = """
import json
from torch._inductor import cpu_vec_isa
from aitune_fp.effects.machine.preload import probe_vector_isa
asked = []
check_build = cpu_vec_isa.VecISA.check_build
def counted(self, code):
    asked.append(str(self))
    return check_build(self, code)
cpu_vec_isa.VecISA.check_build = counted
torchs_list = cpu_vec_isa.valid_vec_isa_list
probe_vector_isa()
picked, at_probe = str(cpu_vec_isa.pick_vec_isa()), sorted(set(asked))
torchs = [str(i) for i in torchs_list()]
first = torchs[0] if torchs else ""
print(json.dumps({"picked": picked, "asked": at_probe, "torchs_first": first}))
"""


def test_the_probe_picks_torchs_own_isa_without_building_the_ones_passed_over() -> None:
    """In a fresh process the probe's pick is the first ISA of torch's own full list, and
    no ISA after the picked one was test-built to find it."""
    import json
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"}
    done = subprocess.run([sys.executable, "-c", FIRST_VALID_CHILD], capture_output=True,
                          text=True, timeout=300, check=True, env=env)  # fmt: skip
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["picked"] == seen["torchs_first"]
    if seen["picked"]:
        from torch._inductor import cpu_vec_isa

        order = [str(i) for i in cpu_vec_isa.supported_vec_isa_list]
        assert all(order.index(a) <= order.index(seen["picked"]) for a in seen["asked"])


@dataclass(frozen=True)
class FakeIsa:
    """An ISA whose build check answers ``ok`` and notes that it was asked."""

    label: str
    ok: bool
    asked: list[str]

    def __str__(self) -> str:
        return self.label

    def __bool__(self) -> bool:
        self.asked.append(self.label)
        return self.ok


def _fake_vec_isa(answers: dict[str, bool], simdlen: int | None = None) -> Any:
    """A stand-in for ``torch._inductor.cpu_vec_isa`` over ISAs that answer ``answers``."""
    import functools
    from types import SimpleNamespace

    asked: list[str] = []
    isas = [FakeIsa(label, ok, asked) for label, ok in answers.items()]

    @functools.cache
    def valid_vec_isa_list() -> list[FakeIsa]:
        return [i for i in isas if i]

    return SimpleNamespace(
        supported_vec_isa_list=isas, valid_vec_isa_list=valid_vec_isa_list, asked=asked,
        x86_isa_checker=lambda: ["avx2", "avx512", "avx512_vnni"],
        config=SimpleNamespace(cpp=SimpleNamespace(simdlen=simdlen)),
    )  # fmt: skip


def _on_x86_linux(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the probe's platform checks see x86 Linux, with no capability named."""
    import platform

    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.delenv("ATEN_CPU_CAPABILITY", raising=False)


def test_the_isas_are_asked_best_first_and_the_asking_stops_at_the_first_valid(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The flags' ISAs are asked in torch's order until one builds; the served list is that
    one alone, and an ISA the CPU's flags lack is never asked."""
    from aitune_fp.effects.machine.preload import _first_valid_only

    _on_x86_linux(monkeypatch)
    fake = _fake_vec_isa({"avx512_vnni amx_tile": True, "avx512_vnni": False,
                          "avx512": True, "avx2": True})  # fmt: skip
    _first_valid_only(fake)
    assert fake.asked == ["avx512_vnni", "avx512"]
    assert [str(i) for i in fake.valid_vec_isa_list()] == ["avx512"]


def test_a_named_capability_or_width_gets_torchs_whole_list(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With ``ATEN_CPU_CAPABILITY`` or ``cpp.simdlen`` set the served list is torch's own
    full answer, so a choice other than the first is never narrowed away."""
    from aitune_fp.effects.machine.preload import _first_valid_only

    _on_x86_linux(monkeypatch)
    fake = _fake_vec_isa({"avx512": True, "avx2": True}, simdlen=256)
    _first_valid_only(fake)
    assert [str(i) for i in fake.valid_vec_isa_list()] == ["avx512", "avx2"]
    fake = _fake_vec_isa({"avx512": True, "avx2": True})
    _first_valid_only(fake)
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "avx2")
    assert [str(i) for i in fake.valid_vec_isa_list()] == ["avx512", "avx2"]


def test_a_list_torch_has_answered_already_is_left_as_it_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Once torch's own list was asked in the process, nothing is probed or replaced."""
    from aitune_fp.effects.machine.preload import _first_valid_only

    _on_x86_linux(monkeypatch)
    fake = _fake_vec_isa({"avx512": True, "avx2": True})
    torchs = fake.valid_vec_isa_list
    torchs()
    fake.asked.clear()
    _first_valid_only(fake)
    assert fake.valid_vec_isa_list is torchs and fake.asked == []


def test_a_started_probe_imports_in_the_callers_thread_and_leaves_no_thread() -> None:
    """The modules the probe imports are loaded before its thread starts (two threads never
    import Inductor at once), and once joined the probe leaves no thread behind."""
    from aitune_fp.effects.machine.preload import PROBE_IMPORTS, probe_started

    thread = probe_started()
    assert all(name in sys.modules for name in PROBE_IMPORTS)
    thread.join(timeout=120)
    assert not thread.is_alive()
    assert not [t for t in threading.enumerate() if t.name.startswith("aitune_fp-isa")]
