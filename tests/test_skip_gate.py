"""CI fails on an unexpected skip: a run whose skip reason tests/capabilities.py does not
allow exits non-zero (a test's skip or a module's at collection), an allowed one passes;
and every package a test imports with ``importorskip`` comes with the test extras, or is
a GPU library skipped with an allowed reason."""

from __future__ import annotations

import ast
import importlib.metadata as metadata
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.capabilities import allowed

ROOT = Path(__file__).resolve().parents[1]
GPU_ONLY = {"tensorrt", "torch_tensorrt"}
"""Packages no CPU test extra installs: their importorskip must give an allowed reason."""


def _pytest(tmp_path: Path, body: str, *args: str) -> subprocess.CompletedProcess[str]:
    """A pytest run of ``body`` as one test module, with the skip gate as its plugin."""
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_body.py").write_text(body)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.skip_gate",
         *args, str(tmp_path / "test_body.py")],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
        text=True, timeout=300, check=False,
    )  # fmt: skip


OK = "def test_ok():\n    pass\n"


def test_an_allowed_skip_passes_and_an_xfail_is_no_skip(tmp_path: Path) -> None:
    """Skips that need a CUDA device or native bf16 (with more said after), and an xfail,
    leave the run green."""
    body = ("import pytest\n" + OK
            + "def test_cuda():\n    pytest.skip('needs a CUDA device: none here')\n"
            + "@pytest.mark.skipif(True, reason='needs native bf16')\ndef test_bf16():\n    pass\n"
            + "@pytest.mark.xfail(reason='known')\ndef test_x():\n    assert False\n")  # fmt: skip
    done = _pytest(tmp_path, body)
    assert done.returncode == 0, done.stdout


@pytest.mark.parametrize(
    "body",
    [
        "import pytest\n" + OK + "def test_flaky():\n    pytest.skip('the network is down')\n",
        "import pytest\npytest.importorskip('no_such_module_at_all')\n" + OK,
        "import pytest\n" + OK + "@pytest.mark.skip\ndef test_off():\n    pass\n",
    ],
    ids=["in-a-test", "a-module-at-collection", "a-bare-mark"],
)
def test_any_other_skip_fails_the_run_and_is_listed(tmp_path: Path, body: str) -> None:
    """A skip whose reason is not allowed makes the run exit 1 though nothing failed, and
    the summary names it; ``--allow-unexpected-skips`` lists it without failing."""
    done = _pytest(tmp_path, body)
    assert done.returncode == 1, done.stdout
    assert "unexpected skips" in done.stdout and "test_body.py" in done.stdout
    listed = _pytest(tmp_path, body, "--allow-unexpected-skips")
    assert listed.returncode in (0, 5) and "unexpected skips" in listed.stdout  # 5: none ran


def _extra(name: str, extras: dict[str, list[str]]) -> set[str]:
    """The distributions extra ``name`` installs (its own extras expanded), normalised."""
    found: set[str] = set()
    for requirement in extras[name]:
        head = re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0]
        inner = re.search(r"\[(.*)\]", requirement)
        if head == "aitune_fp" and inner:
            for part in inner.group(1).split(","):
                found |= _extra(part.strip(), extras)
        else:
            found.add(head.lower().replace("_", "-"))
    return found


def _importorskips() -> list[tuple[Path, str, str | None]]:
    """Every ``importorskip(module, reason=...)`` in the tests: file, module, reason."""
    found = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "importorskip":
                module = ast.literal_eval(node.args[0])
                reason = next((ast.literal_eval(k.value) for k in node.keywords
                               if k.arg == "reason"), None)  # fmt: skip
                found.append((path, module, reason))
    return found


def test_every_importorskip_is_a_test_extra_or_an_allowed_gpu_library() -> None:
    """Each package a test imports with ``importorskip`` is installed by the ``test`` extra
    (itself or as what one of its packages requires: grimp by import-linter), so it never
    skips in CI; a GPU library no CPU extra installs skips with an allowed reason."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    test = _extra("test", extras["optional-dependencies"])
    required = {re.split(r"[\[<>=!~; ]", r, maxsplit=1)[0].lower().replace("_", "-")
                for d in test for r in (metadata.requires(d) or ())}  # fmt: skip
    owners = metadata.packages_distributions()
    calls = _importorskips()
    assert len(calls) >= 40
    for path, module, reason in calls:
        top = module.split(".")[0]
        where = f"{path.relative_to(ROOT)}: importorskip({module!r})"
        if top in GPU_ONLY:
            assert reason is not None and allowed(reason), where
            continue
        dists = {d.lower().replace("_", "-") for d in owners.get(top, ())}
        assert dists & (test | required), f"{where}: {dists or 'not installed'} not in [test]"
