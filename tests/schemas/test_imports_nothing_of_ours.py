"""``schemas/`` imports nothing of ours: the records, configuration and table schemas every
layer shares depend on no layer (function-local imports included)."""
from __future__ import annotations

import ast
import pathlib

REPO = pathlib.Path(__file__).resolve().parents[2]
OURS = {"vdgr_core", "pipelines", "transforms", "runners", "bench", "tests"}


def _imported_modules(tree: ast.AST) -> list[str]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append(node.module)
    return out


def test_schemas_import_only_schemas_and_libraries():
    offenders = []
    for path in sorted((REPO / "schemas").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        offenders += [f"{path.relative_to(REPO)}: {m}" for m in _imported_modules(tree)
                      if m.split(".")[0] in OURS]
    assert offenders == []
