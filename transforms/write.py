"""Staged table output (Parquet through Beam filesystems) and tantivy shard publication."""
from __future__ import annotations

import json

import apache_beam as beam
import pyarrow as pa
from apache_beam.io.parquetio import WriteToParquet

from vdgr_core.store.tantivy_shard import build_shard


class WriteStagedTable(beam.PTransform):
    """Rows (dicts of one table) -> Parquet files under ``prefix`` (read back by the commit)."""

    def __init__(self, prefix: str, schema: pa.Schema):
        super().__init__()
        self._prefix = prefix
        self._schema = schema

    def expand(self, rows):
        return rows | "Write parquet" >> WriteToParquet(
            self._prefix, self._schema, file_name_suffix=".parquet")


class _BuildShardDoFn(beam.DoFn):
    def __init__(self, index_root: str):
        self._root = index_root

    def process(self, kv):
        domain, rows = kv
        info = build_shard(self._root, domain, list(rows))
        yield json.dumps({"domain": info.domain, "folder": info.folder, "n_docs": info.n_docs,
                          "digest": info.digest}, sort_keys=True)


class BuildTantivyShards(beam.PTransform):
    """Content rows -> one BM25 shard per domain, built on a worker and published whole.

    Emits one JSON line per shard (domain, folder, n_docs, digest) for the commit step.
    """

    def __init__(self, index_root: str):
        super().__init__()
        self._root = index_root

    def expand(self, content_rows):
        return (content_rows
                | "Shard fields" >> beam.Map(lambda r: (r["domain"], {
                    k: r[k] for k in ("chunk_id", "text", "title", "path", "version", "acl")}))
                | "Group by domain" >> beam.GroupByKey()
                | "Build shard" >> beam.ParDo(_BuildShardDoFn(self._root)))
