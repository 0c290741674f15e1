"""The staging area of one pipeline run: the task manifest, staged row files, their list.

Staging lives under ``<index>/_staging/<run>``:

* ``tasks/part-NNNNN.jsonl``: the documents to process, written by the driver in parts of
  ``TASKS_PER_FILE`` and read by workers (the job graph does not grow with the corpus);
* ``<table>/part-...arrow``: rows staged by workers in bounded Arrow IPC files (an update's
  arriving documents; a build's workers write the index tables' rows as Lance fragments where
  the index lives instead: transforms/write.py);
* ``staged.json``: what the publish step listed (fragments or files, rows and per-domain digests
  of each table, the domain facts, and the other staged records: BM25 sub-shards, layouts).

The driver commits what the list names, then deletes the staging area. A crashed run leaves
only staging and fragments no version names, which readers never look at.

Everything here goes through Beam's ``FileSystems``, so the staging area may be a local folder
or an object-store prefix (``gs://``, ``s3://``; the matching Beam extra must be installed).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Optional

import pyarrow as pa
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from transforms.read import open_read
from transforms.write import STAGED_LIST, decode_rows
from vdgr_core.corpus import CorpusScan, task_to_json
from vdgr_core.store import digest as dg
from vdgr_core.store.location import beam_path

TASKS_PER_FILE = 1000
BATCH_ROWS = 8192


def _is_local(path: str) -> bool:
    return "://" not in path


@dataclass(frozen=True)
class StagedList:
    """``staged.json``: the published files, row counts and digests of each table."""

    files: dict[str, list[str]]
    rows: dict[str, int]
    digests: dict[str, dict[str, int]]       # table -> domain -> digest
    records: list[dict]                      # other staged records (BM25 sub-shards, layouts)
    fragments: dict[str, list[str]] = field(default_factory=dict)   # table -> Lance fragments (JSON)
    facts: dict = field(default_factory=dict)                       # DomainFacts.to_json()

    def of_kind(self, kind: str) -> list[dict]:
        return [r for r in self.records if r["kind"] == kind]


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
        if _is_local(self.root):
            os.makedirs(FileSystems.join(self.root, name), exist_ok=True)
        return FileSystems.join(self.root, name, "part")

    # ---------------------------------------------------------------- task manifest
    def write_tasks(self, scan: CorpusScan, dead_from_scan: Iterable = ()) -> str:
        """Write the scan's tasks (and the files it skipped) as the task manifest; returns its
        file pattern. One JSON object per line: ``{"task": ...}`` or ``{"skipped": ...}``."""
        lines = [json.dumps({"task": json.loads(task_to_json(t))}, sort_keys=True) for t in scan.tasks]
        lines += [json.dumps({"skipped": [d.rel_path, d.domain, d.reason, d.detail]}) for d in dead_from_scan]
        prefix = self.prefix("tasks")
        for start in range(0, max(1, len(lines)), TASKS_PER_FILE):
            path = f"{prefix}-{start // TASKS_PER_FILE:05d}.jsonl"
            with FileSystems.create(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
                f.write("".join(line + "\n" for line in lines[start:start + TASKS_PER_FILE]).encode("utf-8"))
        return prefix + "-*.jsonl"

    # ---------------------------------------------------------------- read back
    def _read(self, path: str) -> bytes:
        with open_read(path) as f:
            return f.read()

    def staged(self) -> StagedList:
        path = FileSystems.join(self.root, STAGED_LIST)
        if not FileSystems.exists(path):
            return StagedList({}, {}, {}, [])
        d = json.loads(self._read(path).decode("utf-8"))
        return StagedList(d["files"], d["rows"],
                          {t: {dom: dg.from_hex(h) for dom, h in m.items()} for t, m in d["digests"].items()},
                          d["records"], d.get("fragments", {}), d.get("facts", {}))

    def batches(self, name: str, schema: pa.Schema, columns: Optional[list[str]] = None,
                staged: Optional[StagedList] = None) -> Iterator[pa.RecordBatch]:
        """The staged rows of ``name`` as record batches of at most ``BATCH_ROWS`` rows, one file
        open at a time (cast to ``schema``; only ``columns`` when given)."""
        staged = staged or self.staged()
        names = columns or schema.names
        target = pa.schema([schema.field(n) for n in names])
        for path in staged.files.get(name, []):
            with open_read(path) as f:
                table = decode_rows(f.read()).select(names)
            for batch in table.to_batches(max_chunksize=BATCH_ROWS):
                yield batch.cast(target) if batch.schema != target else batch

    def reader(self, name: str, schema: pa.Schema, staged: Optional[StagedList] = None) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(schema, self.batches(name, schema, staged=staged))

    def read_table(self, name: str, schema: pa.Schema) -> pa.Table:
        """The whole staged table (small tables and tests only)."""
        return pa.Table.from_batches(list(self.batches(name, schema)), schema=schema)

    def remove(self) -> None:
        try:
            if _is_local(self.root):
                if FileSystems.exists(self.root):
                    FileSystems.delete([self.root])
            else:   # no folder object to test on a store: delete every object under the prefix
                FileSystems.delete([self.root.rstrip("/") + "/"])
        except Exception:  # staging is never read again; a leftover is harmless
            pass
        if _is_local(self.root):
            parent = os.path.dirname(self.root)
            if os.path.isdir(parent) and not os.listdir(parent):
                os.rmdir(parent)
