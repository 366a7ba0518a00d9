"""Package-level rules of the layout (docs/architecture.md): no import cycle, small files,
one module unwrapping effects."""

from __future__ import annotations

import re
from pathlib import Path

import grimp

import aitune_fp


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Every import cycle between aitune_fp modules found by a depth-first walk."""
    state: dict[str, int] = {}
    found: list[list[str]] = []

    def walk(module: str, stack: list[str]) -> None:
        state[module] = 1
        stack.append(module)
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            if not imported.startswith("aitune_fp"):
                continue
            if state.get(imported) == 1:
                found.append([*stack[stack.index(imported) :], imported])
            elif imported not in state:
                walk(imported, stack)
        stack.pop()
        state[module] = 2

    for module in sorted(graph.modules):
        if module.startswith("aitune_fp") and module not in state:
            walk(module, [])
    return found


def test_no_import_cycle_in_the_package() -> None:
    """No aitune_fp module imports itself back through others (TYPE_CHECKING included)."""
    graph = grimp.build_graph("aitune_fp", include_external_packages=False)
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    """The walk reports a two-module cycle, so an empty answer above means something."""
    graph = grimp.ImportGraph()
    for name in ("aitune_fp.a", "aitune_fp.b", "aitune_fp.c"):
        graph.add_module(name)
    graph.add_import(importer="aitune_fp.a", imported="aitune_fp.b")
    graph.add_import(importer="aitune_fp.b", imported="aitune_fp.a")
    graph.add_import(importer="aitune_fp.c", imported="aitune_fp.a")
    assert _cycles(graph) == [["aitune_fp.a", "aitune_fp.b", "aitune_fp.a"]]


def _long_files(root: Path, limit: int) -> list[str]:
    """The ``.py`` files under ``root`` with more than ``limit`` lines."""
    return [
        f"{path}: {n} lines"
        for path in sorted(root.rglob("*.py"))
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > limit
    ]


def test_core_and_shell_files_are_small() -> None:
    """No module in core/ or shell/ is over 300 lines (one purpose per file)."""
    package = Path(aitune_fp.__file__).parent
    assert _long_files(package / "core", 300) + _long_files(package / "shell", 300) == []


def test_the_size_check_sees_a_long_file(tmp_path: Path) -> None:
    """A 301-line file is reported, a 300-line one is not."""
    (tmp_path / "long.py").write_text("x = 1\n" * 301)
    (tmp_path / "ok.py").write_text("x = 1\n" * 300)
    assert _long_files(tmp_path, 300) == [f"{tmp_path / 'long.py'}: 301 lines"]


def test_the_unsafe_contract_flags_an_import_of_returns_unsafe() -> None:
    """The custom import-linter contract reports a module importing returns.unsafe."""
    from aitune_fp.testing.contracts import ExternalSubmoduleContract

    graph = grimp.ImportGraph()
    for name in ("aitune_fp.io", "aitune_fp.bad", "aitune_fp.fine", "returns"):
        graph.add_module(name, is_squashed=name == "returns")
    lines = {
        "aitune_fp.io": "from returns.unsafe import unsafe_perform_io",
        "aitune_fp.bad": "from returns import unsafe",
        "aitune_fp.fine": "from returns.result import Success",
    }
    for importer, line in lines.items():
        graph.add_import(importer=importer, imported="returns", line_number=3, line_contents=line)
    contract = ExternalSubmoduleContract(
        name="unsafe",
        session_options={"root_packages": ["aitune_fp"]},
        contract_options={
            "source_modules": ["aitune_fp"],
            "package": "returns",
            "submodules": ["unsafe"],
            "allowed": ["aitune_fp.io"],
        },
    )
    check = contract.check(graph, verbose=False)
    assert not check.kept
    assert [b["importer"] for b in check.metadata["broken"]] == ["aitune_fp.bad"]


PROBE = re.compile(r"\b(?:getattr|hasattr)\(\s*(?:config|backend|backend_config|cls)\b")


def _probes(root: Path) -> list[str]:
    """Lines under ``root`` that read a backend config by ``getattr``/``hasattr``."""
    return [
        f"{path}:{n}: {line.strip()}"
        for path in sorted(root.rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if PROBE.search(line)
    ]


def test_backends_are_read_through_their_protocol_not_probed() -> None:
    """No module reads a backend config with getattr/hasattr (it declares what it has,
    aitune_fp/effects/backends/base.py), but for the fields of a dataclass by field name."""
    package = Path(aitune_fp.__file__).parent
    allowed = "value = getattr(config, f.name)"  # describe(): a dataclass's declared fields
    assert [p for p in _probes(package) if not p.endswith(allowed)] == []


def test_the_probe_check_sees_a_probe(tmp_path: Path) -> None:
    """A getattr on a config is reported; one on another object is not."""
    (tmp_path / "m.py").write_text('x = getattr(config, "tf32", False)\ny = getattr(args, "a")\n')
    assert _probes(tmp_path) == [f"{tmp_path / 'm.py'}:1: x = getattr(config, \"tf32\", False)"]
