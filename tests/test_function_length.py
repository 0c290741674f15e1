"""No function of the package folders is over 80 lines: a long function is split into named
steps (generated code and data tables would be listed here; there are none)."""
from __future__ import annotations

import ast
import pathlib

REPO = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("pipelines", "vdgr_core", "transforms", "schemas", "runners")
MAX_LINES = 80
#: "path:function" of generated code or data tables exempt from the limit
EXEMPT: frozenset[str] = frozenset()


def test_no_function_is_over_80_lines():
    long = []
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    lines = node.end_lineno - node.lineno + 1
                    name = f"{path.relative_to(REPO)}:{node.name}"
                    if lines > MAX_LINES and name not in EXEMPT:
                        long.append(f"{name} ({lines} lines)")
    assert long == []
