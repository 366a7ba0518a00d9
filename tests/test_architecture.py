"""Package-level rules of the layout (docs/architecture.md): no import cycle."""

from __future__ import annotations

import grimp


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
