"""Lance fragments written where the index lives, by whoever makes the rows.

A LanceDB table of an index is a Lance dataset, ``<index>/lance/<table>.lance``. Its rows live
in data files under ``data/``, grouped into *fragments*; a table version is a manifest naming
fragments. So a build's workers write their rows as fragments straight into the table's folder
(:func:`write_fragments`), and nothing names them until the driver commits the table with one
metadata-only operation listing them (vdgr_core/store/commit.py). Fragments a crashed or
retried worker wrote are named by no version: readers never see them, and ``vdgr gc`` removes
them (vdgr_core/store/gc.py).

A fragment travels between processes as its metadata, a JSON text of a few hundred bytes (its
data file, row count, field ids). Before the commit, a worker that needs another worker's rows
(a BM25 sub-shard, a domain's query layout) reads the data files of the fragments named to it
(:func:`read_fragments`).

Written with the ``lance`` package (``pylance``), pinned to the Lance release that ``lancedb``
embeds, so every data file and table version is one LanceDB reads (docs/DECISIONS.md).
"""
from __future__ import annotations

import json
import os
from typing import Iterable, Sequence

import pyarrow as pa

from vdgr_core.store.failpoints import failpoint
from vdgr_core.store.lance_store import storage_options
from vdgr_core.store.location import IndexLocation

#: Lance's data file format for every fragment (a table's fragments must agree)
STORAGE_VERSION = "2.2"
#: rows per data file a worker writes at most (its bundle decides how many it has)
MAX_ROWS_PER_FILE = 1 << 20


def lance_module():
    """The ``lance`` module, imported with its Rust log at ``error``: a worker's first fragment
    of a table that has no version yet would otherwise print a warning to standard error."""
    import sys

    if "lance" in sys.modules:
        return sys.modules["lance"]
    had = "LANCE_LOG" in os.environ
    os.environ.setdefault("LANCE_LOG", "error")
    try:
        import lance
        import lance.fragment  # noqa: F401
    finally:
        if not had:
            os.environ.pop("LANCE_LOG", None)
    return lance


def table_uri(index_uri: str, name: str) -> str:
    """The Lance dataset of table ``name`` of the index at ``index_uri`` (its query string, if
    any, at the end).

    Examples
    --------
    >>> table_uri("s3://bucket/index?region=eu-west-1", "contents")
    's3://bucket/index/lance/contents.lance?region=eu-west-1'
    """
    return IndexLocation.join_uri(str(index_uri), "lance", f"{name}.lance")


def write_fragments(index_uri: str, name: str, rows: pa.Table, *, replace: bool = False) -> list[str]:
    """Write ``rows`` as new fragments of table ``name`` (not committed: no version names them
    yet); their metadata as JSON texts, in order. No rows, no fragment.

    ``replace``: the fragments will make the table's next version whole (a build's overwrite),
    so their schema is ``rows``'s whatever the table's is now; otherwise they are appended to
    the table's rows, and must match its schema."""
    if rows.num_rows == 0:
        return []
    lance = lance_module()
    written = lance.fragment.write_fragments(
        rows, table_uri(index_uri, name), schema=rows.schema, mode="overwrite" if replace else "append",
        max_rows_per_file=MAX_ROWS_PER_FILE, data_storage_version=STORAGE_VERSION,
        storage_options=storage_options(str(index_uri)) or None)
    failpoint("store.fragments_written")
    return [json.dumps(f.to_json(), sort_keys=True) for f in written]


def fragment_metadata(texts: Iterable[str]) -> list:
    """``lance.fragment.FragmentMetadata`` of each JSON text."""
    FragmentMetadata = lance_module().fragment.FragmentMetadata
    return [FragmentMetadata.from_json(t) for t in texts]


def projection(schema: pa.Schema, columns: Iterable[str]) -> pa.Schema:
    """The fields ``columns`` of ``schema``, in that order (what :func:`read_fragments` reads)."""
    return pa.schema([schema.field(c) for c in columns])


def read_fragments(index_uri: str, name: str, texts: Sequence[str], schema: pa.Schema) -> pa.Table:
    """The rows of fragments of table ``name`` that no version names yet (as
    :func:`write_fragments` wrote them: one data file each, no deletions), with the columns of
    ``schema`` (the table's schema or a projection of it).

    Raises
    ------
    ValueError
        For a fragment that has deletions or several data files (a committed one).
    """
    from lance.file import LanceFileReader

    lance_module()
    options = storage_options(str(index_uri)) or None
    base = table_uri(index_uri, name) + "/data/"
    parts = []
    for text in texts:
        meta = json.loads(text)
        if meta.get("deletion_file") or len(meta["files"]) != 1:
            raise ValueError(f"fragment {meta['files']} of {name} is not one fresh data file")
        reader = LanceFileReader(base + meta["files"][0]["path"], storage_options=options,
                                 columns=list(schema.names))
        parts.append(reader.read_all().to_table().select(schema.names))
    return pa.concat_tables(parts).cast(schema) if parts else schema.empty_table()


def read_table(index_uri: str, name: str, columns: Sequence[str], version: int) -> pa.Table:
    """Columns ``columns`` of version ``version`` of table ``name`` (a committed one)."""
    ds = lance_module().dataset(table_uri(index_uri, name), version=version,
                          storage_options=storage_options(str(index_uri)) or None)
    return ds.to_table(columns=list(columns))


__all__ = ["MAX_ROWS_PER_FILE", "STORAGE_VERSION", "fragment_metadata", "projection", "read_fragments", "read_table",
           "table_uri", "write_fragments"]
