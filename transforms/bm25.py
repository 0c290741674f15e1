"""BM25 sub-shards built from the staged content files of each (domain, sub-shard)."""
from __future__ import annotations

import apache_beam as beam

from transforms.write import read_staged_file
from vdgr_core.store.tantivy_shard import SHARD_COLUMNS, build_shard


class _BuildSubShardDoFn(beam.DoFn):
    def __init__(self, index_root: str):
        self._root = index_root

    def process(self, kv):
        (domain, sub), paths = kv
        rows = []
        for path in sorted(paths):
            rows += read_staged_file(path).select(list(SHARD_COLUMNS)).to_pylist()
        info = build_shard(self._root, domain, rows, sub)
        yield {"kind": "shard", "domain": info.domain, "sub": info.sub, "folder": info.folder,
               "n_docs": info.n_docs, "digest": info.digest, "schema": info.schema, "acl": list(info.acl)}


class BuildSubShards(beam.PTransform):
    """Staged content-file records (partition = [domain, sub]) -> one BM25 sub-shard per
    (domain, sub), built by one worker from those files only and published whole; emits a
    ``shard`` staged record each. Only file names cross the shuffle, never rows."""

    def __init__(self, index_root: str):
        super().__init__()
        self._root = index_root

    def expand(self, content_files):
        return (content_files
                | "Key by sub-shard" >> beam.Map(lambda r: ((r["part"][0], int(r["part"][1])), r["temp"]))
                | "Files of sub-shard" >> beam.GroupByKey()
                | "Build sub-shard" >> beam.ParDo(_BuildSubShardDoFn(self._root)))
