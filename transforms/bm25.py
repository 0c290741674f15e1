"""BM25 sub-shards built from the content fragments of each (domain, sub-shard)."""
from __future__ import annotations

import apache_beam as beam

from schemas import tables as T
from vdgr_core.store.fragments import projection, read_fragments
from vdgr_core.store.tantivy_shard import SHARD_COLUMNS, build_shard


# the content columns a shard is built from (none of them depends on the vector width)
_SHARD_INPUT = projection(T.contents_schema(1), SHARD_COLUMNS)


class _BuildSubShardDoFn(beam.DoFn):
    def __init__(self, index_root: str):
        self._root = index_root

    def process(self, kv):
        (domain, sub), fragment_lists = kv
        texts = sorted(t for fragments in fragment_lists for t in fragments)
        rows = read_fragments(self._root, T.CONTENTS, texts, _SHARD_INPUT).to_pylist()
        info = build_shard(self._root, domain, rows, sub)
        yield {"kind": "shard", "domain": info.domain, "sub": info.sub, "folder": info.folder,
               "n_docs": info.n_docs, "digest": info.digest, "schema": info.schema, "acl": list(info.acl)}


class BuildSubShards(beam.PTransform):
    """Content ``fragments`` records (partition = [domain, sub]) -> one BM25 sub-shard per
    (domain, sub), built by one worker from those fragments only and published whole; emits a
    ``shard`` staged record each. Only fragment names cross the shuffle, never rows."""

    def __init__(self, index_root: str):
        super().__init__()
        self._root = index_root

    def expand(self, content_records):
        return (content_records
                | "Key by sub-shard" >> beam.Map(lambda r: ((r["part"][0], int(r["part"][1])), r["fragments"]))
                | "Fragments of sub-shard" >> beam.GroupByKey()
                | "Build sub-shard" >> beam.ParDo(_BuildSubShardDoFn(self._root)))
