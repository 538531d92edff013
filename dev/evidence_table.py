"""Print the markdown table of a chapter's gate evidence for its README.

    python3 dev/evidence_table.py kernels/ch10/expectations_h200.json

Paste it between `<!-- evidence-table: kernels/ch10/expectations_h200.json -->` and
`<!-- /evidence-table -->`; tests/integration/test_readme_evidence.py keeps the two equal.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from aisp_prof.pairs.declared import module_declarations
from aisp_prof.render.readme.evidence_table import markdown


def books_for(expectations: dict, kernels: Path) -> dict:
    """Each recorded pair's book declaration, read from its module without importing it."""
    out = {}
    for pair in expectations.get("pairs", {}):
        chapter, name = pair.split(".", 1)
        module = kernels / chapter / f"{name}.py"
        out[pair] = module_declarations(module).get("book") if module.exists() else None
    return out


if __name__ == "__main__":
    path = Path(sys.argv[1])
    data = json.loads(path.read_text())
    print(markdown(data, books_for(data, Path("kernels"))))
