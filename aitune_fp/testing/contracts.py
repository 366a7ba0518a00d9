"""Custom import-linter contracts: a submodule of an external package (``returns.unsafe``)
and the inference SDKs the backends declare.

import-linter squashes external packages to their top-level name, so its ``forbidden``
contract cannot name ``returns.unsafe``. This contract reads the recorded import lines
instead: every module under ``source_modules`` that imports ``package`` must not name one
of ``submodules`` on that line, except the modules in ``allowed``.

:class:`DeclaredSdkContract` derives its rule from the backends' declarations
(:func:`~aitune_fp.effects.backends.registry.sdk_owners`): each declared SDK is imported
only by the backend module declaring it and the helper modules it names, so a new backend
module needs no edit in pyproject. Both are registered in pyproject (``contract_types``)
and run by ``lint-imports``; nothing else imports this.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

from grimp import ImportGraph
from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck


class ExternalSubmoduleContract(Contract):
    """Only ``allowed`` modules may import ``package``'s ``submodules``."""

    type_name = "external_submodule"

    source_modules = fields.SetField(subfield=fields.StringField())
    package = fields.StringField()
    submodules = fields.SetField(subfield=fields.StringField())
    allowed = fields.SetField(subfield=fields.StringField(), required=False, default=set())

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        """Every offending import line, with its module and line number."""
        roots: set[str] = {str(m) for m in self.source_modules}  # type: ignore[attr-defined]
        package = str(self.package)
        subs = "|".join(re.escape(str(s)) for s in self.submodules)  # type: ignore[attr-defined]
        name = re.escape(package)
        pattern = re.compile(rf"\b{name}\.({subs})\b|from\s+{name}\s+import\b.*\b({subs})\b")
        allowed = {str(m) for m in self.allowed}  # type: ignore[attr-defined]
        broken: list[dict[str, Any]] = []
        for importer in sorted(graph.find_modules_that_directly_import(package)):
            inside = any(importer == r or importer.startswith(f"{r}.") for r in roots)
            if not inside or importer in allowed:
                continue
            for detail in graph.get_import_details(importer=importer, imported=package):
                line = str(detail["line_contents"])
                if pattern.search(line):
                    where = {"importer": importer, "line": detail["line_number"]}
                    broken.append({**where, "contents": line})
        return ContractCheck(kept=not broken, metadata={"broken": broken})

    def render_broken_contract(self, check: ContractCheck) -> None:
        """One line per offending import."""
        for item in check.metadata["broken"]:
            output.print_error(f"{item['importer']}:{item['line']}: {item['contents']}")


class DeclaredSdkContract(Contract):
    """Each inference SDK a backend declares is imported only by its owners: the module that
    declares it and the helper modules its declaration names. ``backends``: modules outside
    the package whose backend declarations count too (read by importing them)."""

    type_name = "declared_sdks"

    backends = fields.SetField(subfield=fields.StringField(), required=False, default=set())

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        """Every direct import of a declared SDK by a module that does not own it."""
        from aitune_fp.effects.backends.registry import declared_in, sdk_owners

        extra = [
            cls
            for name in sorted(str(m) for m in self.backends)  # type: ignore[attr-defined]
            for cls in declared_in(importlib.import_module(name))
        ]
        broken: list[dict[str, Any]] = []
        for sdk, owners in sorted(sdk_owners(extra).items()):
            if sdk not in graph.modules:
                continue
            for importer in sorted(graph.find_modules_that_directly_import(sdk) - owners):
                for detail in graph.get_import_details(importer=importer, imported=sdk):
                    where = {"importer": importer, "line": detail["line_number"], "sdk": sdk}
                    broken.append({**where, "contents": str(detail["line_contents"])})
        return ContractCheck(kept=not broken, metadata={"broken": broken})

    def render_broken_contract(self, check: ContractCheck) -> None:
        """One line per offending import, naming the SDK."""
        for item in check.metadata["broken"]:
            output.print_error(
                f"{item['importer']}:{item['line']}: {item['contents']} "
                f"({item['sdk']} is declared by another backend)"
            )
