"""The public module for backend authors: the docs' import block runs as shown, the
one-file example imports only from it, and the old documented paths still work with a
DeprecationWarning."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

import aitune_fp.backends as public

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "backends.md"
EXAMPLE = ROOT / "tests" / "effects" / "onefile_backend.py"


def _doc_import_block() -> str:
    """The python block of docs/backends.md that imports from aitune_fp.backends."""
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    return next(b for b in blocks if b.startswith("from aitune_fp.backends import"))


def test_the_docs_import_block_runs_as_shown() -> None:
    """The import block docs/backends.md shows runs unchanged and binds every name the
    one-file example needs."""
    names: dict[str, object] = {}
    exec(_doc_import_block(), names)
    needed = {
        "Declaration",
        "Library",
        "ConfigIdentity",
        "Built",
        "LoadRequest",
        "Samples",
        "BuildLog",
        "available_build",
        "BackendFailure",
    }
    assert needed <= set(names)


def test_every_public_name_resolves() -> None:
    """Each name in aitune_fp.backends.__all__ is bound in the module."""
    assert all(getattr(public, name, None) is not None for name in public.__all__)


def test_the_one_file_example_imports_only_the_public_module() -> None:
    """Every aitune_fp import of tests/effects/onefile_backend.py is from aitune_fp.backends."""
    tree = ast.parse(EXAMPLE.read_text())
    sources = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    sources |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    ours = {s for s in sources if s.split(".")[0] == "aitune_fp"}
    assert ours == {"aitune_fp.backends"}


def _python(code: str, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *flags, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


OLD_PATHS = [
    (
        "from aitune_fp.effects.inputs import Samples, InputSpec\n"
        "import aitune_fp.backends as b\n"
        "assert Samples is b.Samples and InputSpec is b.InputSpec",
        "aitune_fp.effects.inputs.Samples is deprecated",
    ),
    (
        "from aitune_fp.effects.backends._guard import BuildLog, available_build\n"
        "import aitune_fp.backends as b\n"
        "assert BuildLog is b.BuildLog and available_build is b.available_build",
        "_guard is deprecated",
    ),
]


@pytest.mark.parametrize(("code", "warning"), OLD_PATHS)
def test_an_old_documented_path_works_and_warns(code: str, warning: str) -> None:
    """An import path the previous release documented (``aitune_fp.effects.inputs.Samples``,
    ``aitune_fp.effects.backends._guard``) gives the public names, and fails when
    deprecation warnings are errors (so it does warn, saying so)."""
    assert _python(code).returncode == 0
    strict = _python(code, "-W", "error::DeprecationWarning")
    assert strict.returncode != 0 and warning in strict.stderr
