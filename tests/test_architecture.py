"""Package-level rules of the layout (docs/architecture.md): no import cycle, small files,
short function bodies, doctested effects, one module unwrapping effects, no ``Any`` records.

The measures are defined in :mod:`aitune_fp.testing.code_shape`; ``scripts/code_shape.py``
prints them per layer."""

from __future__ import annotations

import ast
import inspect
import re
from collections import Counter
from pathlib import Path

import pytest

import aitune_fp
from aitune_fp.testing import code_shape

# grimp (import-linter's graph) is a test tool, not carried to a lent GPU machine, where
# `pytest -m gpu tests` still imports this module: skip it there, with the reason.
grimp = pytest.importorskip("grimp", reason="grimp (import-linter) is not installed")

PACKAGE = Path(aitune_fp.__file__).parent
P90_LIMITS = {"core": 12, "effects": 15, "shell": 15, "cli": 15}


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


def test_no_file_in_the_package_is_long() -> None:
    """No module anywhere in aitune_fp is over 300 lines (one purpose per file)."""
    assert code_shape.long_files(PACKAGE, 300) == []


def test_a_file_over_260_lines_says_why_at_its_top() -> None:
    """Every module over 260 lines states, in its module docstring, why its ideas do not
    split ("Longer than 260 lines: …"; files are split where the ideas split)."""
    silent = [
        line
        for line in code_shape.long_files(PACKAGE, 260)
        for path in [line.rsplit(": ", 1)[0]]
        if "longer than 260 lines"
        not in (ast.get_docstring(ast.parse(Path(path).read_text())) or "").lower()
    ]
    assert silent == []


def test_the_effects_layer_is_rooms_not_a_flat_hall() -> None:
    """The effects layer keeps at most 12 files at its top level: the rest sit in folders
    that name what they hold (inputs, checks, measure, cache, machine…)."""
    top = sorted(p.name for p in (PACKAGE / "effects").glob("*.py"))
    assert len(top) <= 12, top


def test_no_module_name_repeats_three_times() -> None:
    """No base name (``__init__`` aside) names three modules of the package: a name used
    that often says nothing of what each file holds."""
    names = Counter(p.name for p in PACKAGE.rglob("*.py") if p.name != "__init__.py")
    assert [n for n, count in names.items() if count >= 3] == []


def test_the_size_check_sees_a_long_file(tmp_path: Path) -> None:
    """A 301-line file is reported, a 300-line one is not."""
    (tmp_path / "long.py").write_text("x = 1\n" * 301)
    (tmp_path / "ok.py").write_text("x = 1\n" * 300)
    assert code_shape.long_files(tmp_path, 300) == [f"{tmp_path / 'long.py'}: 301 lines"]


@pytest.mark.parametrize("layer", ["core", "effects", "shell", "cli"])
def test_function_bodies_are_short(layer: str) -> None:
    """The p90 of function body lengths stays within the layer's limit (core 12, effects,
    shell and cli 15)."""
    assert code_shape.layer_p90(PACKAGE / layer) <= P90_LIMITS[layer]


PINNED_WIDE = {
    "aitune_fp/shell/serving/triton_export.py: export_triton": "the CLI's export options",
}
"""Wide functions left as they are for now, each with why (issue 34 names no others)."""


def _entry_points() -> set[str]:
    """``"path: name"`` of the public entry points (``aitune_fp.__all__``'s functions and
    classes): they keep their keyword-only options, however many."""
    found = set()
    for name in aitune_fp.__all__:
        value = inspect.unwrap(getattr(aitune_fp, name))  # a context manager's own function
        if inspect.isfunction(value) or inspect.isclass(value):
            path = Path(inspect.getfile(value)).relative_to(PACKAGE.parent)
            found.add(f"{path}: {value.__name__}")
    return found


def _entry_or_method(line: str, entries: set[str]) -> bool:
    """Whether a wide-function line names an entry point or a method of an entry class."""
    where = line.rsplit(": ", 1)[0]
    path, name = where.split(": ", 1)
    return where in entries or f"{path}: {name.split('.')[0]}" in entries


def test_no_internal_function_takes_more_than_eight_parameters() -> None:
    """Every function of the package takes at most 8 parameters (``self`` aside), but the
    public entry points of ``aitune_fp.__all__`` and their methods and the pinned few: the
    same inputs travel as one value, not through parameter lists."""
    entries = _entry_points()
    wide = [
        line.removeprefix(str(PACKAGE.parent) + "/")
        for line in code_shape.wide_functions_under(PACKAGE, 8)
    ]
    internal = [line for line in wide if not _entry_or_method(line, entries)]
    assert [line for line in internal if line.rsplit(": ", 1)[0] not in PINNED_WIDE] == []


def test_the_parameter_measure_sees_a_wide_function(tmp_path: Path) -> None:
    """A nine-parameter function is reported, an eight-parameter method (``self`` aside)
    and a function of eight with ``*args`` and ``**kwargs`` counted in are not."""
    (tmp_path / "m.py").write_text(
        "def wide(a, b, c, d, e, f, g, h, *, i): pass\n"
        "def narrow(a, b, c, d, e, f, *g, **h): pass\n"
        "class C:\n    def m(self, a, b, c, d, e, f, g, h): pass\n"
    )
    assert code_shape.wide_functions_under(tmp_path, 8) == [
        f"{tmp_path / 'm.py'}: wide: 9 parameters"
    ]


def test_the_body_measure_sees_long_bodies(tmp_path: Path) -> None:
    """One 20-line body among ten keeps p90 at the short length; two of ten lift it to 20."""
    short = 'def f{}():\n    """Doc."""\n    return 1\n'
    long = "def g{}():\n" + "    x = 1\n" * 20
    (tmp_path / "a.py").write_text("".join(short.format(i) for i in range(9)) + long.format(0))
    assert code_shape.layer_p90(tmp_path) == 1
    shorts = "".join(short.format(i) for i in range(8))
    (tmp_path / "a.py").write_text(shorts + long.format(0) + long.format(1))
    assert code_shape.layer_p90(tmp_path) == 20


@pytest.mark.parametrize("layer", ["effects", "shell"])
def test_public_functions_carry_doctests(layer: str) -> None:
    """At least 40 % of the layer's public module-level functions have a doctest."""
    assert code_shape.doctest_share(PACKAGE / layer) >= 0.4


def test_the_doctest_share_sees_missing_examples(tmp_path: Path) -> None:
    """One of two public functions has an example: half; private and method examples are ignored."""
    (tmp_path / "m.py").write_text(
        'def f():\n    """>>> f()"""\ndef g():\n    pass\ndef _h():\n    """>>> _h()"""\n'
        'class C:\n    def m(self):\n        """>>> 1"""\n'
    )
    assert code_shape.doctest_share(tmp_path) == 0.5


def test_effects_are_unwrapped_in_one_module() -> None:
    """Exactly one module imports returns.unsafe or calls unsafe_perform_io."""
    assert len(code_shape.unsafe_modules(PACKAGE)) == 1


def test_the_unsafe_count_sees_every_spelling(tmp_path: Path) -> None:
    """An import of returns.unsafe, a ``from returns import unsafe`` and a bare call all count."""
    (tmp_path / "a.py").write_text("import returns.unsafe\n")
    (tmp_path / "b.py").write_text("from returns import unsafe\n")
    (tmp_path / "c.py").write_text("x = io.unsafe_perform_io(y)\n")
    (tmp_path / "d.py").write_text("from returns.io import IOResult\n")
    assert [p.name for p in code_shape.unsafe_modules(tmp_path)] == ["a.py", "b.py", "c.py"]


def test_the_shell_has_no_any_records() -> None:
    """No shell record has an ``Any``-typed field and no shell alias stands for ``Any``."""
    assert code_shape.any_records_under(PACKAGE / "shell") == []


def test_the_any_check_sees_fields_and_aliases(tmp_path: Path) -> None:
    """An ``Any`` alias and an ``Any``-typed dataclass field are reported, an ``int`` field not."""
    (tmp_path / "m.py").write_text(
        "from typing import Any\nimport dataclasses\nSetup = Any\n"
        "@dataclasses.dataclass(frozen=True)\nclass R:\n    n: int\n    calls: tuple[Any, ...]\n"
    )
    path = tmp_path / "m.py"
    assert code_shape.any_records_under(tmp_path) == [f"{path}: Setup", f"{path}: R.calls"]


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
    assert _probes(tmp_path) == [f'{tmp_path / "m.py"}:1: x = getattr(config, "tf32", False)']
