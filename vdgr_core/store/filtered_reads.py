"""Reads of a committed index's tables by typed filters on key columns, in bounded IN-lists.

What an update reads of the rows its change touches (pipelines/delta_rows.py): never a whole
table, only the rows whose key (a path, an id) is one of a list, a few thousand keys a query.
"""
from __future__ import annotations

from typing import Iterable, Optional, Sequence

import pyarrow as pa
from lancedb.expr import col

#: values per IN (...) filter
IN_CHUNK = 4000


class FilteredReads:
    """Rows of the tables ``reader`` opened (pinned to its manifest's versions) by key filters."""

    def __init__(self, reader):
        self._reader = reader

    def where_in(self, name: str, column: str, values: Iterable[str], columns: Optional[Sequence[str]] = None,
                 also=None) -> pa.Table:
        """Rows of table ``name`` whose ``column`` is one of ``values`` (and ``also``, a
        LanceDB expression, holds), ``columns`` only (all when None)."""
        values = sorted(set(values))
        table = self._reader.table(name)
        schema = table.schema if columns is None else pa.schema([table.schema.field(c) for c in columns])
        parts = []
        for start in range(0, len(values), IN_CHUNK):
            expr = col(column).isin(values[start:start + IN_CHUNK])
            if also is not None:
                expr = expr & also
            q = table.search().where(expr)
            if columns is not None:
                q = q.select(list(columns))
            parts.append(q.to_arrow().select(schema.names))
        return pa.concat_tables(parts).cast(schema) if parts else schema.empty_table()

    def where_array_has_any(self, name: str, column: str, values: Iterable[str], columns: Sequence[str]) -> pa.Table:
        """Rows whose list column ``column`` holds any of ``values`` (corpus paths, quoted)."""
        values = sorted(set(values))
        table = self._reader.table(name)
        schema = pa.schema([table.schema.field(c) for c in columns])
        parts = []
        for start in range(0, len(values), IN_CHUNK):
            quoted = ", ".join("'" + v.replace("'", "''") + "'" for v in values[start:start + IN_CHUNK])
            parts.append(table.search().where(f"array_has_any({column}, [{quoted}])").select(list(columns))
                         .to_arrow().select(schema.names))
        return pa.concat_tables(parts).cast(schema) if parts else schema.empty_table()


__all__ = ["IN_CHUNK", "FilteredReads"]
