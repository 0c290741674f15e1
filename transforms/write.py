"""Staged table output (Arrow IPC files through Beam filesystems) and its publication.

Workers write the rows of every table as uncompressed Arrow IPC stream files of at most
``max_rows`` rows (a bundle never holds a whole table), each under a temporary name beside its
final place, and digest the rows they write per domain (vdgr_core/store/digest.py). Each file
becomes a small *staged record* (table, temporary path, rows, digests; BM25 sub-shards and
other published pieces are staged records too). One final step (:class:`PublishStaged`)
renames the files of the bundles that committed to ``<prefix>-<part>-NNNNN-of-NNNNN.arrow``
and writes ``staged.json``: the files of each table, their row counts and the per-domain
digests summed. The driver's commit reads only that list and streams the files into LanceDB.
A retried bundle only leaves an unread temporary file, which goes with the staging area.
"""
from __future__ import annotations

import json
import uuid
from collections import defaultdict
from typing import Callable, Optional

import apache_beam as beam
import pyarrow as pa
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from vdgr_core.ids import stable_id
from vdgr_core.store import digest as dg

STAGED_LIST = "staged.json"
DEFAULT_MAX_ROWS = 4096
#: staged row files: Arrow IPC streams. A staged file is read once, by the same version of this
#: code, so it needs no encoding: writing one costs ~4x less than uncompressed Parquet here and
#: reading it back is zero-copy (docs/DECISIONS.md)
STAGED_SUFFIX = ".arrow"


def _write_temp(prefix: str, suffix: str, data: bytes) -> str:
    folder, _ = FileSystems.split(prefix)
    temp = FileSystems.join(folder, f".tmp-{uuid.uuid4().hex}{suffix}")
    with FileSystems.create(temp, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        f.write(data)
    return temp


def part_token(part) -> str:
    """File-name token of a partition key (a tuple of values)."""
    return stable_id("part", *map(str, part))[:12] if part else ""


def encode_rows(rows: list[dict], schema: pa.Schema) -> tuple[bytes, pa.Table]:
    """(the staged file's bytes, the table) of ``rows``."""
    table = pa.Table.from_pylist(rows, schema=schema)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes(), table


def decode_rows(data) -> pa.Table:
    """The table in a staged file's bytes (:func:`encode_rows`); zero-copy."""
    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()


class _StageRowsDoFn(beam.DoFn):
    """Rows of one table -> staged files of at most ``max_rows`` rows, one staged record each."""

    def __init__(self, table: str, prefix: str, schema: pa.Schema, partition: Optional[Callable],
                 max_rows: int, digest: bool):
        self._table, self._prefix, self._schema = table, prefix, schema
        self._partition, self._max_rows, self._digest = partition, max_rows, digest

    def start_bundle(self):
        self._buffers: dict[tuple, list] = defaultdict(list)

    def process(self, row):
        part = tuple(self._partition(row)) if self._partition else ()
        buf = self._buffers[part]
        buf.append(row)
        if len(buf) >= self._max_rows:
            yield self._flush(part)

    def finish_bundle(self):
        for part in sorted(self._buffers):
            if self._buffers[part]:
                yield beam.transforms.window.GlobalWindows.windowed_value(self._flush(part))

    def _flush(self, part: tuple) -> dict:
        rows, self._buffers[part] = self._buffers[part], []
        data, table = encode_rows(rows, self._schema)
        token = part_token(part)
        prefix = f"{self._prefix}-{token}" if token else self._prefix
        digests = dg.domain_digests(table) if self._digest else {}
        return {"kind": "file", "table": self._table, "prefix": prefix, "suffix": STAGED_SUFFIX,
                "temp": _write_temp(prefix, STAGED_SUFFIX, data), "part": list(part), "rows": len(rows),
                "digests": {d: dg.to_hex(v) for d, v in digests.items()}}


class StageRows(beam.PTransform):
    """Rows (dicts) of table ``table`` -> staged files under ``prefix`` (staged records).

    Parameters
    ----------
    schema:
        The table's index schema: rows are written, and digested, exactly as LanceDB stores them.
    partition:
        ``row -> tuple``: rows of different partitions go to different files (the BM25
        sub-shard of a content row), and each staged record names its partition.
    digest:
        Digest the rows per domain (False for tables outside the index contract).
    """

    def __init__(self, table: str, prefix: str, schema: pa.Schema, *, partition: Optional[Callable] = None,
                 max_rows: int = DEFAULT_MAX_ROWS, digest: bool = True):
        super().__init__()
        self._args = (table, prefix, schema, partition, max_rows, digest)

    def expand(self, rows):
        return rows | "Write staged files" >> beam.ParDo(_StageRowsDoFn(*self._args))


def read_staged_file(path: str) -> pa.Table:
    """The rows of one staged file."""
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        return decode_rows(f.read())


def _publish(_key, records, root: str = "") -> str:
    """Rename the committed temporary files to their final names and write ``staged.json``."""
    records = list(records)
    files = [r for r in records if r["kind"] == "file"]
    by_prefix: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in files:
        by_prefix[(r["prefix"], r["suffix"])].append(r)
    sources, destinations = [], []
    listing: dict[str, list[str]] = defaultdict(list)
    rows: dict[str, int] = defaultdict(int)
    digests: dict[str, dict[str, int]] = defaultdict(dict)
    for (prefix, suffix), group in sorted(by_prefix.items()):
        group.sort(key=lambda r: r["temp"])
        for i, r in enumerate(group):
            final = f"{prefix}-{i:05d}-of-{len(group):05d}{suffix}"
            if FileSystems.exists(r["temp"]):        # absent when a retry of this step renamed it
                sources.append(r["temp"])
                destinations.append(final)
            listing[r["table"]].append(final)
            rows[r["table"]] += r["rows"]
            digests[r["table"]] = dg.add(digests[r["table"]], {d: dg.from_hex(h) for d, h in r["digests"].items()})
    if sources:
        FileSystems.rename(sources, destinations)
    others = sorted((r for r in records if r["kind"] != "file"), key=lambda r: json.dumps(r, sort_keys=True))
    summary = {"files": {t: sorted(v) for t, v in listing.items()}, "rows": dict(rows),
               "digests": {t: {d: dg.to_hex(v) for d, v in sorted(m.items())} for t, m in digests.items()},
               "records": others}
    path = FileSystems.join(root, STAGED_LIST)
    with FileSystems.create(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        f.write(json.dumps(summary, sort_keys=True).encode("utf-8"))
    return path


class PublishStaged(beam.PTransform):
    """Staged records of any number of tables (and other pieces) -> published, listed in
    ``<staging root>/staged.json``, in one step once every bundle has committed."""

    def __init__(self, root: str):
        super().__init__()
        self._root = root

    def expand(self, staged):
        return (staged
                | "One group" >> beam.Map(lambda s: (None, s))
                | "Gather" >> beam.GroupByKey()
                | "Rename and list" >> beam.MapTuple(_publish, root=self._root))
