"""LanceDB table writes and pinned reads.

Writes (vdgr_core/store/writer.py) return a :class:`TableWrite` (name, version, rows) that tests
and the manifest use; readers open a table at the exact version the manifest names.
"""
from __future__ import annotations

from dataclasses import dataclass

import lancedb



@dataclass(frozen=True)
class TableWrite:
    """What a table write did: the committed version and the number of rows."""

    name: str
    version: int
    rows: int


def connect(uri: str):
    """Connect to the LanceDB database of an index (a local folder or an object-store URI)."""
    return lancedb.connect(uri.rstrip("/") + "/lance")


def has_table(db, name: str) -> bool:
    """True when the database holds table ``name`` (follows pagination)."""
    token = None
    while True:
        page = db.list_tables(page_token=token) if token else db.list_tables()
        if name in page.tables:
            return True
        token = page.page_token
        if not token:
            return False


def open_pinned(db, name: str, version: int):
    """Open table ``name`` checked out at ``version`` (read-only view)."""
    t = db.open_table(name)
    t.checkout(version)
    return t
