"""No dead code in the package folders: vulture finds nothing but the framework entry points
and outside readers its whitelist names (tests/support/vulture_whitelist.py)."""
from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("pipelines", "vdgr_core", "transforms", "schemas", "runners")
WHITELIST = "tests/support/vulture_whitelist.py"


def test_vulture_finds_no_unused_code():
    pytest.importorskip("vulture")
    out = subprocess.run([sys.executable, "-m", "vulture", *PACKAGES, WHITELIST, "--min-confidence", "60"],
                         cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, ("unused code (delete it, or whitelist a framework entry point):\n"
                                 f"{out.stdout}{out.stderr}")


def test_the_whitelist_stays_short():
    """Entry points only: code that only tests use is deleted, not whitelisted."""
    lines = [line for line in (REPO / WHITELIST).read_text(encoding="utf-8").splitlines()
             if line.startswith("_.")]
    assert len(lines) <= 15
