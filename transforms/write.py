"""Worker-written table output and its publication: Lance fragments, or staged Arrow files.

Workers write the rows of every index table as Lance fragments of that table, straight where
the index lives (:class:`WriteFragments`; vdgr_core/store/fragments.py), in batches of at most
``max_rows`` rows (a bundle never holds a whole table), and digest the rows they write per
domain (vdgr_core/store/digest.py). No version names a fragment until the driver's commit. Rows
that only the driver reads back (an update's arriving documents) are staged instead as
uncompressed Arrow IPC stream files under a temporary name (:class:`StageRows`). Either way each
batch becomes a small *staged record* (table, fragments or temporary path, rows, digests); BM25
sub-shards and query layouts are staged records too. One final step (:class:`PublishStaged`)
renames the files of the bundles that committed to ``<prefix>-<part>-NNNNN-of-NNNNN.arrow``
and writes ``staged.json``: the fragments and files of each table, their row counts, the
per-domain digests and domain facts summed, and the other records. The driver reads only that
list. A table counted where its rows are made (:class:`CountRows`) must have exactly that many
rows in its records, or the publish step raises :class:`RowsLostError` and nothing is
published. A retried bundle leaves only fragments or a temporary file that nothing names: the
staging area goes with the run, and ``vdgr gc`` removes the fragments.
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

from schemas.errors import RowsLostError
from vdgr_core.ids import stable_id
from vdgr_core.indexing.domain_facts import DomainFacts
from vdgr_core.store.fragments import write_fragments
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


def decode_rows(data) -> pa.Table:
    """The table in a staged file's bytes (as ``StageRows`` writes it); zero-copy."""
    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()


class _BufferedRowsDoFn(beam.DoFn):
    """Rows of one table -> batches of at most ``max_rows`` rows per partition, each written by
    ``_flush`` as one staged record."""

    def __init__(self, table: str, schema: pa.Schema, partition: Optional[Callable], max_rows: int, digest: bool):
        self._table, self._schema = table, schema
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
        table = pa.Table.from_pylist(rows, schema=self._schema)
        digests = dg.domain_digests(table) if self._digest else {}
        return {"table": self._table, "part": list(part), "rows": len(rows),
                "digests": {d: dg.to_hex(v) for d, v in digests.items()}, **self._written(part, table)}

    def _written(self, part: tuple, table: pa.Table) -> dict:
        raise NotImplementedError


class _StageRowsDoFn(_BufferedRowsDoFn):
    """... as a staged Arrow IPC file under ``prefix`` (renamed into place by the publish step)."""

    def __init__(self, table: str, prefix: str, schema: pa.Schema, partition: Optional[Callable],
                 max_rows: int, digest: bool):
        super().__init__(table, schema, partition, max_rows, digest)
        self._prefix = prefix

    def _written(self, part: tuple, table: pa.Table) -> dict:
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, self._schema) as writer:
            writer.write_table(table)
        token = part_token(part)
        prefix = f"{self._prefix}-{token}" if token else self._prefix
        return {"kind": "file", "prefix": prefix, "suffix": STAGED_SUFFIX,
                "temp": _write_temp(prefix, STAGED_SUFFIX, sink.getvalue().to_pybytes())}


class _WriteFragmentsDoFn(_BufferedRowsDoFn):
    """... as Lance fragments of the table in the index (named by no version until the commit),
    with the domain facts of the rows (vdgr_core/indexing/domain_facts.py) when asked."""

    def __init__(self, index_root: str, table: str, schema: pa.Schema, partition: Optional[Callable],
                 max_rows: int, digest: bool, facts: Optional[Callable], replace: bool):
        super().__init__(table, schema, partition, max_rows, digest)
        self._root, self._facts, self._replace = index_root, facts, replace

    def _written(self, part: tuple, table: pa.Table) -> dict:
        out = {"kind": "fragments", "fragments": write_fragments(self._root, self._table, table,
                                                                 replace=self._replace)}
        if self._facts is not None:
            out["facts"] = self._facts(table).to_json()
        return out


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


class WriteFragments(beam.PTransform):
    """Rows (dicts) of index table ``table`` -> Lance fragments of that table, written where the
    index lives by the worker that holds the rows (one ``fragments`` staged record per batch of
    at most ``max_rows`` rows of a partition, naming them; the driver's commit names them in a
    table version: vdgr_core/store/writer.py).

    Parameters
    ----------
    schema:
        The table's index schema: rows are written, and digested, exactly as LanceDB stores them.
    partition:
        ``row -> tuple``: rows of different partitions go to different fragments (the domain,
        and for contents the BM25 sub-shard), and each record names its partition.
    facts:
        ``table -> DomainFacts`` of the rows, carried in the record and summed by the publish step.
    replace:
        The fragments will be the table's whole rows (a build's overwrite), whatever its schema
        is now; else they are appended to its rows.
    """

    def __init__(self, index_root: str, table: str, schema: pa.Schema, *, partition: Optional[Callable] = None,
                 max_rows: int = DEFAULT_MAX_ROWS, digest: bool = True, facts: Optional[Callable] = None,
                 replace: bool = True):
        super().__init__()
        self._args = (index_root, table, schema, partition, max_rows, digest, facts, replace)

    def expand(self, rows):
        return rows | "Write fragments" >> beam.ParDo(_WriteFragmentsDoFn(*self._args))


EXPECTED = "expected"        # a staged record of a table's row count before its writers


def _check_counts(records: list, written: dict) -> None:
    """Raise :class:`RowsLostError` unless every table counted by :class:`CountRows` had that
    many rows written by its writers' records."""
    expected: dict[str, int] = defaultdict(int)
    for r in records:
        if r["kind"] == EXPECTED:
            expected[r["table"]] += r["rows"]
    wrong = {t: (written.get(t, 0), n) for t, n in sorted(expected.items()) if written.get(t, 0) != n}
    if wrong:
        raise RowsLostError("rows written differ from rows produced (the runner lost or repeated "
                            "elements between steps; nothing is published): "
                            + "; ".join(f"{t}: {w:,} written of {n:,}" for t, (w, n) in wrong.items()))


class CountRows(beam.PTransform):
    """Rows of tables -> one staged record per table of their number, taken on a branch beside
    the writers (``CountRows.of({table: [collections]})``). The publish step checks each
    against the rows the writers' records name, so a row a runner drops (or repeats) between
    the producing step and the writer fails the build instead of publishing a smaller index
    (two of five 100k builds on two worker pools lost rows in a grouping step:
    docs/DECISIONS.md). Rows are counted per bundle where they are made, and one combine
    sums the bundles' counts by table."""

    @staticmethod
    def of(tables: dict) -> "beam.PCollection":
        """Count the rows of ``tables`` (table name -> row collections): its staged records."""
        counted = [rows | f"Count {name} rows {i}" >> beam.ParDo(_BundleCountDoFn(name))
                   for name, parts in tables.items() for i, rows in enumerate(parts)]
        return counted | "All row counts" >> beam.Flatten() | "Count rows" >> CountRows()

    def expand(self, counts):
        return (counts
                | "Sum by table" >> beam.CombinePerKey(sum)
                | "As records" >> beam.MapTuple(lambda t, n: {"kind": EXPECTED, "table": t, "rows": int(n)}))


class _BundleCountDoFn(beam.DoFn):
    """Rows -> one ``(table, rows)`` per bundle: counted where the rows are made, one element
    a bundle leaves the step."""

    def __init__(self, table: str):
        self._table = table

    def start_bundle(self):
        self._n = 0

    def process(self, _row):
        self._n += 1
        return ()

    def finish_bundle(self):
        if self._n:
            yield beam.transforms.window.GlobalWindows.windowed_value((self._table, self._n))


def _publish(_key, records, root: str = "") -> str:
    """Rename the committed temporary files to their final names and write ``staged.json``:
    the files and the fragments of each table, its rows and per-domain digests, the domain
    facts summed, and the other staged records (BM25 sub-shards, layouts)."""
    records = list(records)
    files = [r for r in records if r["kind"] == "file"]
    by_prefix: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in files:
        by_prefix[(r["prefix"], r["suffix"])].append(r)
    sources, destinations = [], []
    listing: dict[str, list[str]] = defaultdict(list)
    for (prefix, suffix), group in sorted(by_prefix.items()):
        group.sort(key=lambda r: r["temp"])
        for i, r in enumerate(group):
            final = f"{prefix}-{i:05d}-of-{len(group):05d}{suffix}"
            if FileSystems.exists(r["temp"]):        # absent when a retry of this step renamed it
                sources.append(r["temp"])
                destinations.append(final)
            listing[r["table"]].append(final)
    if sources:
        FileSystems.rename(sources, destinations)
    fragments: dict[str, list[str]] = defaultdict(list)
    rows: dict[str, int] = defaultdict(int)
    digests: dict[str, dict[str, int]] = defaultdict(dict)
    facts = DomainFacts()
    for r in records:
        if r["kind"] not in ("file", "fragments"):
            continue
        if r["kind"] == "fragments":
            fragments[r["table"]] += r["fragments"]
            facts.add(DomainFacts.from_json(r.get("facts", {})))
        rows[r["table"]] += r["rows"]
        digests[r["table"]] = dg.add(digests[r["table"]], {d: dg.from_hex(h) for d, h in r["digests"].items()})
    _check_counts(records, rows)
    others = sorted((r for r in records if r["kind"] not in ("file", "fragments", EXPECTED)),
                    key=lambda r: json.dumps(r, sort_keys=True))
    summary = {"files": {t: sorted(v) for t, v in listing.items()},
               "fragments": {t: sorted(v) for t, v in fragments.items()}, "rows": dict(rows),
               "digests": {t: {d: dg.to_hex(v) for d, v in sorted(m.items())} for t, m in digests.items()},
               "facts": facts.to_json(), "records": others}
    path = FileSystems.join(root, STAGED_LIST)
    with FileSystems.create(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        f.write(json.dumps(summary, sort_keys=True).encode("utf-8"))
    return path


class PublishStaged(beam.PTransform):
    """Staged records of any number of tables (files, fragments) and other pieces (BM25
    sub-shards, layouts) -> published, listed in ``<staging root>/staged.json``, in one step
    once every bundle has committed."""

    def __init__(self, root: str):
        super().__init__()
        self._root = root

    def expand(self, staged):
        return (staged
                | "One group" >> beam.Map(lambda s: (None, s))
                | "Gather" >> beam.GroupByKey()
                | "Rename and list" >> beam.MapTuple(_publish, root=self._root))
