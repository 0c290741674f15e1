"""Staged table output (Parquet through Beam filesystems) and tantivy shard publication.

Staged files are published like Beam's file sinks do, with fewer steps: each bundle writes its
file under a temporary name beside its final place (outside the ``<prefix>*`` pattern the commit
reads), and one final step renames the files of the bundles that committed to
``<prefix>-NNNNN-of-NNNNN<suffix>``. A retried bundle only leaves an unread temporary file, which
goes with the staging area. One publish step serves every staged table of a pipeline
(:class:`PublishStagedFiles`), where a Beam sink per table cost five stages each.
"""
from __future__ import annotations

import io
import json
import uuid
from collections import defaultdict

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from vdgr_core.store.tantivy_shard import build_shard

# A staged file in flight: (final prefix, suffix, temporary path).
StagedFile = tuple[str, str, str]


def _write_temp(prefix: str, suffix: str, data: bytes) -> StagedFile:
    folder, _ = FileSystems.split(prefix)
    temp = FileSystems.join(folder, f".tmp-{uuid.uuid4().hex}{suffix}")
    with FileSystems.create(temp, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        f.write(data)
    return prefix, suffix, temp


class _StageBuffered(beam.DoFn):
    """Buffers a bundle's elements and writes them as one temporary file per bundle."""

    suffix = ""

    def __init__(self, prefix: str):
        self._prefix = prefix

    def encode(self, items: list) -> bytes:
        raise NotImplementedError

    def start_bundle(self):
        self._items = []

    def process(self, item):
        self._items.append(item)

    def finish_bundle(self):
        if self._items:
            items, self._items = self._items, []
            staged = _write_temp(self._prefix, self.suffix, self.encode(items))
            yield beam.transforms.window.GlobalWindows.windowed_value(staged)


class _StageParquet(_StageBuffered):
    suffix = ".parquet"

    def __init__(self, prefix: str, schema: pa.Schema):
        super().__init__(prefix)
        self._schema = schema

    def encode(self, rows: list) -> bytes:
        # Table.from_pylist converts in Arrow's C++ code; Beam's WriteToParquet appends every
        # value to Python column lists first (same table, several times slower)
        buf = io.BytesIO()
        pq.write_table(pa.Table.from_pylist(rows, schema=self._schema), buf, compression="none")
        return buf.getvalue()


class _StageLines(_StageBuffered):
    suffix = ".jsonl"

    def encode(self, lines: list) -> bytes:
        return "".join(line + "\n" for line in lines).encode("utf-8")


class StageParquet(beam.PTransform):
    """Rows (dicts of one table) -> staged Parquet files under ``prefix``, to publish."""

    def __init__(self, prefix: str, schema: pa.Schema):
        super().__init__()
        self._prefix = prefix
        self._schema = schema

    def expand(self, rows):
        return rows | "Write temporary parquet" >> beam.ParDo(_StageParquet(self._prefix, self._schema))


class StageLines(beam.PTransform):
    """Text lines -> staged ``.jsonl`` files under ``prefix``, to publish."""

    def __init__(self, prefix: str):
        super().__init__()
        self._prefix = prefix

    def expand(self, lines):
        return lines | "Write temporary lines" >> beam.ParDo(_StageLines(self._prefix))


def _publish(_key, staged) -> list[str]:
    """Rename the committed temporary files to their final names; returns the final paths."""
    by_prefix: dict[tuple[str, str], list[str]] = defaultdict(list)
    for prefix, suffix, temp in staged:
        by_prefix[(prefix, suffix)].append(temp)
    sources, destinations = [], []
    for (prefix, suffix), temps in sorted(by_prefix.items()):
        n = len(temps)
        for i, temp in enumerate(sorted(temps)):
            final = f"{prefix}-{i:05d}-of-{n:05d}{suffix}"
            if FileSystems.exists(temp):        # absent when a retry of this step renamed it
                sources.append(temp)
                destinations.append(final)
    if sources:
        FileSystems.rename(sources, destinations)
    return destinations


class PublishStagedFiles(beam.PTransform):
    """Staged files of any number of tables -> published under their prefixes, in one step."""

    def expand(self, staged):
        return (staged
                | "One group" >> beam.Map(lambda s: (None, s))
                | "Gather" >> beam.GroupByKey()
                | "Rename to final names" >> beam.FlatMapTuple(_publish))


class WriteStagedTable(beam.PTransform):
    """Rows (dicts of one table) -> Parquet files under ``prefix`` (read back by the commit)."""

    def __init__(self, prefix: str, schema: pa.Schema):
        super().__init__()
        self._prefix = prefix
        self._schema = schema

    def expand(self, rows):
        return (rows
                | "Stage" >> StageParquet(self._prefix, self._schema)
                | "Publish" >> PublishStagedFiles())


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
