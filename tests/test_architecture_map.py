"""ARCHITECTURE.md is a true map: every file it names exists, every ``file.py:function`` and
``file.py:Class.method`` it names is defined there, and it stays short enough to read."""
from __future__ import annotations

import ast
import pathlib
import re

REPO = pathlib.Path(__file__).resolve().parents[1]
MAP = REPO / "ARCHITECTURE.md"
MAX_BYTES = 12 * 1024

#: inside backticks: `folder/`, `path.py`, `path.py:name` or `path.py:Class.method`
TOKEN = re.compile(r"`([\w./]+/|[\w./]+\.py)(?::([\w.]+))?`")


def _defines(path: pathlib.Path, dotted: str) -> bool:
    """Whether ``path`` defines ``dotted`` (a function or class, or a class's method)."""
    scope = ast.parse(path.read_text(encoding="utf-8")).body
    for part in dotted.split("."):
        node = next((n for n in scope if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                     and n.name == part), None)
        if node is None:
            return False
        scope = node.body
    return True


def _refs() -> list[tuple[str, pathlib.Path, str]]:
    """(as written, resolved path, name or "") of every reference, in order. A bare file name
    (``mask.py``) is in the folder of the last path named before it."""
    out, folder = [], REPO
    for m in TOKEN.finditer(MAP.read_text(encoding="utf-8")):
        written, name = m.group(1), m.group(2) or ""
        path = (REPO / written) if "/" in written else folder / written
        folder = path if written.endswith("/") else path.parent
        out.append((written, path, name))
    return out


def test_every_named_file_and_function_exists():
    wrong = []
    for written, path, name in _refs():
        if written.endswith("/"):
            if not path.is_dir():
                wrong.append(f"{written}: no such folder")
        elif not path.is_file():
            wrong.append(f"{written}: no such file ({path.relative_to(REPO)})")
        elif name and not _defines(path, name):
            wrong.append(f"{written}:{name}: not defined in {path.relative_to(REPO)}")
    assert wrong == []


def test_the_map_names_functions_and_stays_short():
    assert sum(1 for _, _, name in _refs() if name) >= 40
    assert len(MAP.read_bytes()) <= MAX_BYTES
