"""LanceDB table writes and pinned reads.

Writes return a :class:`TableWrite` (name, version, rows) that tests and the manifest use;
readers open a table at the exact version the manifest names.
"""
from __future__ import annotations

from dataclasses import dataclass

import lancedb
import pyarrow as pa

from schemas import tables as T

# The column each table is sorted and deduplicated on: same input, same table bytes.
KEY_COLUMN = {
    T.DOCUMENTS: "doc_id",
    T.DIRECTORIES: "node_id",
    T.CONTENTS: "chunk_id",
    T.ENTITIES: "entity_id",
    T.EDGES: "edge_id",
    T.DEAD_LETTERS: "path",
    T.SECRET_FINDINGS: "finding_id",
    T.EMBEDDING_CACHE: "key",
}


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


def sort_rows(name: str, table: pa.Table) -> pa.Table:
    key = KEY_COLUMN[name]
    if table.num_rows == 0:
        return table
    return table.sort_by([(key, "ascending")])


def write_table(db, name: str, table: pa.Table, presorted: bool = False) -> TableWrite:
    """Replace the contents of table ``name`` with ``table`` as a new version.

    Rows are written sorted by the table's key (``presorted``: the caller already did).
    Older versions stay readable, so a reader pinned by the previous manifest is unaffected.
    """
    if not presorted:
        table = sort_rows(name, table)
    if has_table(db, name):
        t = db.open_table(name)
        t.add(table, mode="overwrite")
    else:
        t = db.create_table(name, data=table, schema=table.schema)
    return TableWrite(name, t.version, table.num_rows)


def open_pinned(db, name: str, version: int):
    """Open table ``name`` checked out at ``version`` (read-only view)."""
    t = db.open_table(name)
    t.checkout(version)
    return t
