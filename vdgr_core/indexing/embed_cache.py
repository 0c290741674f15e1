"""Embedding with a content-hash cache, so unchanged texts are never embedded twice.

The cache is the ``embedding_cache`` LanceDB table of an index: one row per key (the sha256 of
model and text, :func:`vdgr_core.embedding.embedding_key`), found through a BTree on ``key``.
Writes offer rows and add the keys the table does not hold yet, each once: a versioned corpus
repeats most of its texts, and rows offered twice (two versions embedded in one build) would
make the table, and every lookup, grow with the repetitions.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from schemas import tables as T
from vdgr_core.embedding import embedding_key
from vdgr_core.progress import PROGRESS


@dataclass(frozen=True)
class EmbeddedBatch:
    keys: tuple[str, ...]
    vectors: np.ndarray          # (n, dim) float32
    computed: tuple[bool, ...]   # False where the vector came from the cache


# Lance's cache for the lookup connection: the ``key`` BTree's pages must stay in it (~40 bytes a
# key: 54 MB at 1.3M keys), or each lookup reads the index again. With the driver's 64 MiB a 1M-chunk
# update's 22 lookups of ~1,000 keys took 0.1-0.2 s each; with room for the index, 0.03 s.
LOOKUP_CACHE_BYTES = 256 << 20


class EmbeddingCache:
    """Read side of the ``embedding_cache`` LanceDB table of an index (may not exist yet)."""

    def __init__(self, index_uri: Optional[str]):
        self._table = None
        if index_uri:
            from vdgr_core.store.lance_store import connect, has_table

            db = connect(index_uri, cache_bytes=LOOKUP_CACHE_BYTES)
            if has_table(db, T.EMBEDDING_CACHE):
                self._table = db.open_table(T.EMBEDDING_CACHE)

    def lookup(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        if self._table is None or not keys:
            return {}
        from lancedb.expr import col

        found = self._table.search().where(col("key").isin(list(keys))).limit(len(keys) * 2 + 10).to_arrow()
        vecs = found.column("vector").to_pylist()
        return {k: np.asarray(v, dtype=np.float32) for k, v in zip(found.column("key").to_pylist(), vecs)}


def embed_with_cache(get_embedder: Callable[[], object], dim: int, cache: EmbeddingCache,
                     items: Sequence[tuple[str, str]]) -> EmbeddedBatch:
    """Embed (key, text) items, taking what the cache has and computing the rest.

    ``get_embedder`` is only called when something is missing from the cache, so an update
    whose texts are all cached never loads the model. The texts computed are counted in the
    process's progress (``vdgr_core.progress.PROGRESS``).
    """
    keys = [k for k, _ in items]
    cached = cache.lookup(keys)
    missing = [(i, t) for i, (k, t) in enumerate(items) if k not in cached]
    out = np.zeros((len(items), dim), dtype=np.float32)
    computed = [False] * len(items)
    if missing:
        PROGRESS.queued(len(missing))
        vecs = get_embedder().embed([t for _, t in missing])
        PROGRESS.embedded(len(missing))
        for (i, _), v in zip(missing, vecs):
            out[i] = v
            computed[i] = True
    for i, k in enumerate(keys):
        if k in cached:
            out[i] = cached[k]
    return EmbeddedBatch(tuple(keys), out, tuple(computed))


class _FirstOffers:
    """Which rows of a stream of cache rows offer a key for the first time.

    Keys are remembered by their first 64 bits (sha256 hex keys: 8 bytes a key) in sorted runs
    merged like a binary counter, so the memory is bounded by the stream's distinct keys and the
    work is O(n log n). Two keys sharing a prefix only make the second a cache miss later (its
    text is embedded again), never a wrong vector.
    """

    def __init__(self):
        self._runs: list[np.ndarray] = []

    @staticmethod
    def _prefixes(keys: pa.Array) -> np.ndarray:
        keys = keys.to_pylist()
        try:
            raw = bytes.fromhex("".join(k[:16].rjust(16, "0") for k in keys))
        except ValueError:                       # not hex digests: 8 bytes of a digest of each
            raw = b"".join(hashlib.blake2b(k.encode("utf-8"), digest_size=8).digest() for k in keys)
        return np.frombuffer(raw, dtype=">u8").astype(np.uint64)

    def _seen(self, prefixes: np.ndarray) -> np.ndarray:
        seen = np.zeros(len(prefixes), dtype=bool)
        for run in self._runs:
            pos = np.minimum(np.searchsorted(run, prefixes), len(run) - 1)
            seen |= run[pos] == prefixes
        return seen

    def select(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """The rows of ``batch`` whose key no earlier row (of this batch or an earlier one) offered."""
        if batch.num_rows == 0:
            return batch
        prefixes = self._prefixes(batch.column(batch.schema.get_field_index("key")))
        unique, first = np.unique(prefixes, return_index=True)
        fresh = ~self._seen(unique)
        keep = np.sort(first[fresh])
        run = unique[fresh]
        while self._runs and len(self._runs[-1]) <= len(run):
            run = np.union1d(self._runs.pop(), run)
        if len(run):
            self._runs.append(run)
        return batch if len(keep) == batch.num_rows else batch.take(pa.array(keep))


def append_to_cache(index_uri: str, rows: pa.Table, dim: int) -> int:
    """Add (key, vector) rows to the cache table, each key the table does not hold once; returns
    the distinct keys offered."""
    from vdgr_core.store.failpoints import failpoint
    from vdgr_core.store.lance_store import connect, has_table

    if rows.num_rows == 0:
        failpoint("commit.cache_written")
        return 0
    db = connect(index_uri)
    rows = rows.cast(T.embedding_cache_schema(dim))
    first = _FirstOffers()
    rows = pa.Table.from_batches([first.select(b) for b in rows.to_batches()], schema=rows.schema)
    if has_table(db, T.EMBEDDING_CACHE):
        t = db.open_table(T.EMBEDDING_CACHE)
        t.merge_insert("key").when_not_matched_insert_all().execute(rows)
    else:
        t = db.create_table(T.EMBEDDING_CACHE, data=rows)
    _keep_key_index(t)
    failpoint("commit.cache_written")
    return rows.num_rows


def new_cache_rows(index_uri: str, rows: pa.Table, dim: int) -> pa.Table:
    """The (key, vector) rows of ``rows`` whose key the cache does not hold, each key once: what
    a commit adds to the cache."""
    rows = rows.cast(T.embedding_cache_schema(dim))
    first = _FirstOffers()
    rows = pa.Table.from_pylist([], schema=rows.schema) if rows.num_rows == 0 else pa.Table.from_batches(
        [first.select(b) for b in rows.to_batches()], schema=rows.schema)
    held = set(EmbeddingCache(index_uri).lookup(rows.column("key").to_pylist())) if rows.num_rows else set()
    if held:
        rows = rows.filter(pc.invert(pc.is_in(rows.column("key"), value_set=pa.array(sorted(held), pa.string()))))
    return rows


def append_batches_to_cache(index_uri: str, batches, dim: int) -> int:
    """Add (key, vector) rows, streamed from record batches, to the cache table: each key the
    cache does not hold yet, once; returns the distinct keys offered."""
    from vdgr_core.store.lance_store import connect, has_table

    schema = T.embedding_cache_schema(dim)
    first_offers = _FirstOffers()
    batches = (first_offers.select(b) for b in batches)
    first = next((b for b in batches if b.num_rows), None)
    if first is None:
        return 0
    count = [0]

    def all_batches():
        for b in _chain(first, batches):
            count[0] += b.num_rows
            yield b.cast(schema) if b.schema != schema else b

    reader = pa.RecordBatchReader.from_batches(schema, all_batches())
    db = connect(index_uri)
    if has_table(db, T.EMBEDDING_CACHE):
        t = db.open_table(T.EMBEDDING_CACHE)
        t.merge_insert("key").when_not_matched_insert_all().execute(reader)
    else:
        t = db.create_table(T.EMBEDDING_CACHE, data=reader, schema=schema)
    _keep_key_index(t)
    from vdgr_core.store.failpoints import failpoint

    failpoint("commit.cache_written")
    return count[0]


def _chain(first, rest):
    yield first
    yield from rest


def _keep_key_index(table) -> None:
    """A BTree index on ``key`` keeps lookups fast as the cache grows.

    Rows added after the index was built are still found (scanned); the index is rebuilt only
    when they exceed a tenth of the table, so a small update does not re-index the whole cache.
    """
    from lancedb.index import BTree

    stats = table.index_stats("key_idx") if any(i.name == "key_idx" for i in table.list_indices()) else None
    if stats is None or stats.num_unindexed_rows * 10 > stats.num_indexed_rows:
        table.create_index("key", config=BTree(), name="key_idx", replace=True)


__all__ = ["EmbeddingCache", "embed_with_cache", "append_to_cache", "append_batches_to_cache", "new_cache_rows", "embedding_key",
           "LOOKUP_CACHE_BYTES"]
