"""The staging area of one build run: Parquet files per table and the shard list.

Staging lives under ``<index>/_staging/<run>``; the commit reads it back, writes the tables
and the manifest, then deletes it. A crashed run leaves only staging behind, which readers
never look at and the next run ignores.

Everything here goes through Beam's ``FileSystems``, like the Parquet sinks that write the
staged files, so the staging area may be a local folder or an object-store prefix
(``gs://``, ``s3://``; the matching Beam extra must be installed). See docs/RUNNERS.md for what
else an object-store index still needs.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from vdgr_core.store.location import beam_path
from vdgr_core.store.tantivy_shard import ShardInfo


def _is_local(path: str) -> bool:
    return "://" not in path


@dataclass(frozen=True)
class Staging:
    root: str

    @classmethod
    def new(cls, index_dir: str, run_name: str) -> "Staging":
        root = FileSystems.join(beam_path(index_dir), "_staging", run_name)
        if FileSystems.exists(root):
            FileSystems.delete([root])
        if _is_local(root):
            os.makedirs(root)
        # object stores have no folders: the sinks create the objects under the prefix
        return cls(root)

    def prefix(self, name: str) -> str:
        return FileSystems.join(self.root, name, "part")

    def _files(self, suffix: str, name: str) -> list[str]:
        found = FileSystems.match([self.prefix(name) + "*" + suffix])[0].metadata_list
        return sorted(m.path for m in found)

    def _read(self, path: str) -> bytes:
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
            return f.read()

    def read_table(self, name: str, schema: pa.Schema) -> pa.Table:
        parts = [pq.read_table(pa.BufferReader(self._read(f))) for f in self._files(".parquet", name)]
        parts = [t for t in parts if t.num_rows]
        if not parts:
            return pa.Table.from_pylist([], schema=schema)
        return pa.concat_tables([t.select(schema.names).cast(schema) for t in parts])

    def read_shards(self) -> list[ShardInfo]:
        out = []
        for f in self._files(".jsonl", "shards"):
            for line in self._read(f).decode("utf-8").splitlines():
                if line.strip():
                    d = json.loads(line)
                    out.append(ShardInfo(d["domain"], d["folder"], d["n_docs"], d["digest"]))
        return sorted(out, key=lambda s: s.domain)

    def remove(self) -> None:
        try:
            if FileSystems.exists(self.root):
                FileSystems.delete([self.root])
        except Exception:  # staging is never read again; a leftover is harmless
            pass
        if _is_local(self.root):
            parent = os.path.dirname(self.root)
            if os.path.isdir(parent) and not os.listdir(parent):
                os.rmdir(parent)
