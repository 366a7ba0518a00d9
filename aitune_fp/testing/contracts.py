"""An import-linter contract for a submodule of an external package (``returns.unsafe``).

import-linter squashes external packages to their top-level name, so its ``forbidden``
contract cannot name ``returns.unsafe``. This contract reads the recorded import lines
instead: every module under ``source_modules`` that imports ``package`` must not name one
of ``submodules`` on that line, except the modules in ``allowed``. It is registered in
pyproject (``contract_types``) and run by ``lint-imports``; nothing else imports this.
"""

from __future__ import annotations

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
