"""What gpu-check's ``deps`` step must install: the dependencies that are missing or outdated.

    python scripts/gpu_deps.py MODULE:DIST ...   # one requirement a line; none: all satisfied

Rules (no third-party import: this runs before anything is installed):
- a ``MODULE:DIST`` pair is wanted when ``MODULE`` cannot be found, or when the installed
  ``DIST`` is older than a requirement on it: the project's own (pyproject.toml's
  dependencies and ``export`` extra) or one of another listed distribution's
  ``Requires-Dist`` (markers evaluated here);
- each wanted line is ``DIST`` with every specifier found for it (``returns>=0.30``), so pip
  installs a version that satisfies them, from the wheelhouse or from the package index;
- an image's outdated package is wanted even though it imports (pip's ``--no-deps`` alone
  would keep it).
Versions are read through ``importlib.metadata`` and judged with ``packaging`` (pip's own
vendored copy when ``packaging`` is not installed).
"""

from __future__ import annotations

import importlib.metadata as metadata
import importlib.util
import re
import sys
import tomllib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

try:
    from packaging.requirements import Requirement
    from packaging.version import Version
except ImportError:  # a bare image: pip always carries its own copy
    from pip._vendor.packaging.requirements import Requirement  # type: ignore[no-redef]
    from pip._vendor.packaging.version import Version  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parent.parent
VersionOf = Callable[[str], str | None]
RequiresOf = Callable[[str], Sequence[str]]


def canonical(name: str) -> str:
    """A distribution name as pip compares them.

    >>> canonical("Markdown_It.Py")
    'markdown-it-py'
    """
    return re.sub(r"[-_.]+", "-", name).lower()


def project_requirements(pyproject: Path = ROOT / "pyproject.toml") -> list[str]:
    """The project's runtime dependencies and its ``export`` extra (torch left out)."""
    project = tomllib.loads(pyproject.read_text())["project"]
    wanted = [*project["dependencies"], *project["optional-dependencies"]["export"]]
    return [r for r in wanted if canonical(Requirement(r).name) != "torch"]


def installed_version(dist: str) -> str | None:
    """The installed version of ``dist`` (``importlib.metadata``), or None."""
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def installed_requires(dist: str) -> Sequence[str]:
    """``dist``'s ``Requires-Dist`` lines (none when it is not installed)."""
    try:
        return metadata.requires(dist) or []
    except metadata.PackageNotFoundError:
        return []


def _applies(requirement: Any) -> bool:
    """True when the requirement's marker holds here, with no extra asked for."""
    return requirement.marker is None or requirement.marker.evaluate({"extra": ""})


def wanted(
    pairs: Iterable[str],
    requirements: Sequence[str],
    version_of: VersionOf = installed_version,
    requires_of: RequiresOf = installed_requires,
    found: Callable[[str], bool] = lambda m: importlib.util.find_spec(m) is not None,
) -> list[str]:
    """The requirement lines to install for ``pairs`` (see the module rules)."""
    dists = {canonical(p.split(":")[1]): p.split(":")[0] for p in pairs}
    specs: dict[str, set[str]] = {d: set() for d in dists}
    for line in [*requirements, *(r for d in dists for r in requires_of(d))]:
        try:
            req = Requirement(line)
        except ValueError:  # InvalidRequirement: a metadata line pip would not read either
            continue
        name = canonical(req.name)
        if name in specs and _applies(req) and str(req.specifier):
            specs[name].add(str(req.specifier))
    out = []
    for dist, module in dists.items():
        version = version_of(dist)
        ok = found(module) and version is not None
        for spec in specs[dist]:
            ok = ok and Requirement(f"{dist}{spec}").specifier.contains(
                Version(version or "0"), prereleases=True
            )
        if not ok:
            out.append(dist + ",".join(sorted(specs[dist])))
    return out


def main(argv: list[str]) -> int:
    """Print one wanted requirement a line for the ``MODULE:DIST`` pairs in ``argv``."""
    for line in wanted(argv, project_requirements()):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
