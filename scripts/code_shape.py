"""Print the code-shape figures of issue 22 §5 per layer.

Definitions: aitune_fp/testing/code_shape.py.

Usage: ``python scripts/code_shape.py`` from the repository root.
"""

from __future__ import annotations

import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "aitune_fp"
sys.path.insert(0, str(PACKAGE.parent))

from aitune_fp.testing import code_shape as shape  # noqa: E402


def main() -> None:
    """One line per layer, then the package-wide counts."""
    print(f"{'layer':<8} {'files>300':>9} {'p90 body':>8} {'doctests':>14}")
    for layer in (*shape.LAYERS, "testing", "models"):
        root = PACKAGE / layer
        pairs = [shape.doctest_coverage(text) for text in shape.sources(root).values()]
        covered, total = sum(c for c, _ in pairs), sum(t for _, t in pairs)
        share = f"{covered}/{total} {100 * covered / total:.0f}%" if total else "-"
        print(f"{layer:<8} {len(shape.long_files(root)):>9} {shape.layer_p90(root):>8} {share:>14}")
    for line in shape.long_files(PACKAGE):
        print("  long:", line.removeprefix(str(PACKAGE.parent) + "/"))
    unsafe = shape.unsafe_modules(PACKAGE)
    print(f"unsafe modules: {len(unsafe)}", *(str(p.relative_to(PACKAGE.parent)) for p in unsafe))
    records = shape.any_records_under(PACKAGE / "shell")
    print(
        f"Any records in shell: {len(records)}",
        *(r.removeprefix(str(PACKAGE.parent) + "/") for r in records),
    )


if __name__ == "__main__":
    main()
