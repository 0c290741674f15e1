"""The staging area of one build run: Parquet files per table and the shard list.

Staging lives under ``<index>/_staging/<run>``; the commit reads it back, writes the tables
and the manifest, then deletes it. A crashed run leaves only staging behind, which readers
never look at and the next run ignores.
"""
from __future__ import annotations

import glob
import json
import os
import shutil
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

from vdgr_core.store.tantivy_shard import ShardInfo


@dataclass(frozen=True)
class Staging:
    root: str

    @classmethod
    def new(cls, index_dir: str, run_name: str) -> "Staging":
        root = os.path.join(index_dir, "_staging", run_name)
        if os.path.exists(root):
            shutil.rmtree(root)
        os.makedirs(root)
        return cls(root)

    def prefix(self, name: str) -> str:
        return os.path.join(self.root, name, "part")

    def read_table(self, name: str, schema: pa.Schema) -> pa.Table:
        files = sorted(glob.glob(self.prefix(name) + "*.parquet"))
        parts = [pq.read_table(f) for f in files]
        parts = [t for t in parts if t.num_rows]
        if not parts:
            return pa.Table.from_pylist([], schema=schema)
        return pa.concat_tables([t.select(schema.names).cast(schema) for t in parts])

    def read_shards(self) -> list[ShardInfo]:
        out = []
        for f in sorted(glob.glob(self.prefix("shards") + "*.jsonl")):
            with open(f, encoding="utf-8") as fh:
                for line in fh:
                    if line.strip():
                        d = json.loads(line)
                        out.append(ShardInfo(d["domain"], d["folder"], d["n_docs"], d["digest"]))
        return sorted(out, key=lambda s: s.domain)

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
        parent = os.path.dirname(self.root)
        if os.path.isdir(parent) and not os.listdir(parent):
            os.rmdir(parent)
