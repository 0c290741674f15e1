"""The ``file_stats`` cache: size, mtime and content hash of each corpus file when it was hashed.

An update first compares a file's listed size and mtime with the cached ones and reuses the
cached content hash when they are equal; only the other files are read and hashed. Like git's
index, an entry whose mtime is within ``RACY_NS`` of the moment it was recorded is not trusted
(the file could have changed again within the clock's resolution). A cache only: without it
(an index built before it existed, or a remote corpus without mtimes) every file is hashed,
with the same result. Not named by the manifest, not part of the index contract.
"""
from __future__ import annotations

from typing import Iterable, Mapping, Optional

import pyarrow as pa

from schemas import tables as T

RACY_NS = 2_000_000_000


class FileStatsCache:
    """Read side: path -> (size, mtime_ns, content hash, checked_ns)."""

    def __init__(self, index_uri: str):
        from vdgr_core.store.lance_store import connect, has_table

        self._entries: dict[str, tuple[int, int, str, int]] = {}
        db = connect(index_uri)
        if has_table(db, T.FILE_STATS):
            for r in db.open_table(T.FILE_STATS).to_arrow().to_pylist():
                self._entries[r["path"]] = (r["size"], r["mtime_ns"], r["content_hash"], r["checked_ns"])

    def content_hash(self, path: str, size: int, mtime_ns: int) -> Optional[str]:
        """The cached hash when the file's size and mtime are unchanged (and not racy)."""
        e = self._entries.get(path)
        if e is None or not mtime_ns or (e[0], e[1]) != (size, mtime_ns) or mtime_ns > e[3] - RACY_NS:
            return None
        return e[2] or None


def stat_rows(hashes: Mapping[str, str], file_stats: Mapping[str, tuple[int, int]], checked_ns: int) -> list[dict]:
    """Cache rows for the files in ``hashes`` (path -> content hash) that were listed."""
    return [{"path": p, "size": file_stats[p][0], "mtime_ns": file_stats[p][1], "content_hash": h,
             "checked_ns": checked_ns} for p, h in sorted(hashes.items()) if p in file_stats and h]


def write_file_stats(index_uri: str, rows: Iterable[dict], *, replace_all: bool = False,
                     forget: Iterable[str] = ()) -> None:
    """Write cache rows: all of them (``replace_all``), or replacing those of their paths and
    of ``forget`` (files gone or no longer hashed)."""
    from lancedb.expr import col

    from vdgr_core.store.lance_store import connect, has_table

    table = pa.Table.from_pylist(list(rows), schema=T.file_stats_schema())
    db = connect(index_uri)
    if not has_table(db, T.FILE_STATS):
        db.create_table(T.FILE_STATS, data=table, schema=T.file_stats_schema())
        return
    t = db.open_table(T.FILE_STATS)
    if replace_all:
        t.add(table, mode="overwrite")
        return
    gone = sorted(set(forget) | set(table.column("path").to_pylist()))
    for start in range(0, len(gone), 5000):
        t.delete(col("path").isin(gone[start:start + 5000]))
    if table.num_rows:
        t.add(table)
