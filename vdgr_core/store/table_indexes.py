"""LanceDB indexes of the tables a commit wrote: built as segments by workers, committed by the driver.

Vector index (``vector_idx`` on ``vector``, cosine), once a table has
``StoreConfig.vector_index_min_rows`` rows:

* ``IVF_SQ`` (default): ``rows / vector_rows_per_partition`` IVF partitions of 8-bit
  scalar-quantized vectors; a query scans the partitions it probes (``QueryConfig.ann_nprobes``)
  and re-ranks ``refine_factor`` x k candidates on full vectors. Repeated texts (versions) do
  not hurt it;
* ``IVF_HNSW_SQ``: the same partitions, an HNSW graph (``m``, ``ef_construction``) over the
  quantized vectors in each. Faster per probed partition, but versioned corpora's repeated
  vectors fill its neighbour lists: a scope-free search at 1M grown chunks found 0.81 of the
  exact top 10 (IVF_SQ 0.996; docs/SCALE.md);
* ``IVF_PQ``: the same partitions, product quantization with ``dim / 8`` sub-vectors (a query
  should use ``refine_factor`` for recall; 0.61 on the same search).

Scalar indexes (same names as their columns + ``_idx``): BTree on ids, bitmap on low-cardinality
filter columns (``domain``, ``version``, ``kind``, ``public``), once a table has
``scalar_index_min_rows`` rows.

How they are built (Lance's distributed index build). Once a commit has written a table version,
:func:`index_tasks` lists the indexes due on it as :class:`IndexTask` s; each task builds one
*segment* over some of the version's fragments (``create_index_uncommitted``), wherever it runs
(:func:`build_segment`: a Beam worker, or this process); :func:`commit_segments` names the
segments in one metadata-only commit per table. An IVF_SQ index is split into segments of at
most :data:`ROWS_PER_SEGMENT` rows that share the IVF centroids :func:`train_centroids` trains
on a sample of at most :data:`TRAIN_SAMPLE_MAX_ROWS` rows, so the driver's time and memory do
not grow with the table; the other vector types are one segment trained by the worker that
builds it. An update appends rows; they are searched exactly (flat) until they exceed
``vector_index_retrain_share`` of the indexed rows, when the index is built again.
"""
from __future__ import annotations

import io
import logging
import pickle
from dataclasses import dataclass
from typing import Callable, Mapping, Optional, Sequence

import numpy as np

from schemas import tables as T
from schemas.config import StoreConfig
from vdgr_core.store.fragments import table_uri
from vdgr_core.store.lance_store import storage_options
from vdgr_core.store.location import IndexLocation

_log = logging.getLogger("vdgr.store")

VECTOR_INDEX = "vector_idx"
VECTOR_TABLES = (T.CONTENTS, T.DIRECTORIES, T.ENTITIES)
SCALAR_INDEXES: dict[str, dict[str, str]] = {
    T.CONTENTS: {"chunk_id": "BTREE", "source": "BTREE", "parent_id": "BTREE", "domain": "BITMAP",
                 "version": "BITMAP", "public": "BITMAP"},
    T.DIRECTORIES: {"node_id": "BTREE", "parent_id": "BTREE", "domain": "BITMAP", "version": "BITMAP",
                    "public": "BITMAP"},
    T.ENTITIES: {"entity_id": "BTREE", "norm": "BTREE", "domain": "BITMAP"},
    T.ENTITY_STATS: {"entity_id": "BTREE"},
    T.EDGES: {"edge_id": "BTREE", "src": "BTREE", "dst": "BTREE", "domain": "BITMAP", "kind": "BITMAP"},
    T.DOCUMENTS: {"path": "BTREE"},
    T.EMBEDDING_CACHE: {"key": "BTREE"},
}
#: rows of one IVF_SQ segment at most (one worker task each)
ROWS_PER_SEGMENT = 1 << 20
#: rows the IVF centroids are trained on at most: Lance's 256 a partition up to 1,024 partitions
TRAIN_SAMPLE_MAX_ROWS = 1 << 18
_LANCE_TYPES = {"ivf_sq": "IVF_SQ", "ivf_hnsw_sq": "IVF_HNSW_SQ", "ivf_pq": "IVF_PQ"}


@dataclass(frozen=True)
class IndexTask:
    """One index segment to build on one table version: ``column``'s index ``name`` of ``kind``
    (Lance's index type) over ``fragment_ids``; ``params`` of a vector index (partitions, ...),
    and the shared IVF centroids (a ``.npy`` file, relative to the index) when its segments
    share them."""

    table: str
    version: int
    column: str
    name: str
    kind: str
    fragment_ids: tuple[int, ...]
    params: tuple[tuple[str, int], ...] = ()
    centroids: str = ""


def _dataset(index_uri: str, name: str, version: Optional[int] = None):
    from vdgr_core.store.fragments import lance_module

    return lance_module().dataset(table_uri(index_uri, name), version=version,
                            storage_options=storage_options(str(index_uri)) or None)


def _index_names(ds) -> dict[str, object]:
    return {d.name: d for d in ds.describe_indices()}


def _unindexed_share_high(ds, idx: str, share: float) -> bool:
    stats = ds.stats.index_stats(idx)
    return stats["num_unindexed_rows"] > share * max(1, stats["num_indexed_rows"])


def vector_params(store: StoreConfig, rows: int, dim: int) -> dict[str, int]:
    """The training parameters of the vector index ``store`` asks for on ``rows`` rows."""
    partitions = max(1, rows // store.vector_rows_per_partition)
    if store.vector_index == "ivf_pq":
        return {"num_partitions": partitions, "num_sub_vectors": store.pq_sub_vectors or max(1, dim // 8)}
    if store.vector_index == "ivf_hnsw_sq":
        return {"num_partitions": partitions, "m": store.hnsw_m, "ef_construction": store.hnsw_ef_construction}
    return {"num_partitions": partitions}


def _groups(fragments, max_rows: int) -> list[tuple[int, ...]]:
    """Fragment ids in consecutive groups of at most ``max_rows`` rows (at least one fragment each)."""
    out, group, rows = [], [], 0
    for f in fragments:
        n = f.count_rows()
        if group and rows + n > max_rows:
            out.append(tuple(group))
            group, rows = [], 0
        group.append(f.fragment_id)
        rows += n
    if group:
        out.append(tuple(group))
    return out


def index_tasks(index_uri: str, name: str, version: int, store: StoreConfig, dim: int, *,
                centroids_rel: Callable[[str], str]) -> list[IndexTask]:
    """The index segments due on version ``version`` of table ``name``: every scalar index of
    :data:`SCALAR_INDEXES` (missing, or with more than a tenth of the rows unindexed) once the
    table has ``scalar_index_min_rows`` rows, and the vector index (missing and due by rows, or
    past ``vector_index_retrain_share``). IVF_SQ centroids are trained here, on a bounded sample,
    and written to ``centroids_rel(table)`` (relative to the index)."""
    ds = _dataset(index_uri, name, version)
    rows = ds.count_rows()
    have = _index_names(ds)
    fragments = ds.get_fragments()
    every = tuple(f.fragment_id for f in fragments)
    tasks = []
    if rows >= store.scalar_index_min_rows:
        for column, kind in SCALAR_INDEXES.get(name, {}).items():
            idx = f"{column}_idx"
            if column not in ds.schema.names:
                continue
            if idx not in have or _unindexed_share_high(ds, idx, 0.1):
                tasks.append(IndexTask(name, version, column, idx, kind, every))
    if store.vector_index != "none" and name in VECTOR_TABLES and rows:
        exists = VECTOR_INDEX in have
        due = (rows >= store.vector_index_min_rows) if not exists else _unindexed_share_high(
            ds, VECTOR_INDEX, store.vector_index_retrain_share)
        if due:
            tasks += _vector_tasks(index_uri, ds, name, version, store, rows, dim, fragments, centroids_rel)
    return tasks


def _vector_tasks(index_uri, ds, name, version, store, rows, dim, fragments, centroids_rel) -> list[IndexTask]:
    params = vector_params(store, rows, dim)
    kind = _LANCE_TYPES[store.vector_index]
    items = tuple(sorted(params.items()))
    if kind != "IVF_SQ":            # one segment, trained by the worker that builds it
        return [IndexTask(name, version, "vector", VECTOR_INDEX, kind,
                          tuple(f.fragment_id for f in fragments), items)]
    rel = centroids_rel(name)
    IndexLocation(index_uri).write_whole(rel, _npy_bytes(train_centroids(ds, params["num_partitions"])))
    return [IndexTask(name, version, "vector", VECTOR_INDEX, kind, group, items, rel)
            for group in _groups(fragments, ROWS_PER_SEGMENT)]


def train_centroids(ds, partitions: int) -> np.ndarray:
    """IVF centroids (cosine) of the ``vector`` column trained on at most
    :data:`TRAIN_SAMPLE_MAX_ROWS` sampled rows."""
    from lance.indices import IndicesBuilder

    partitions = max(1, partitions)
    rate = max(1, min(256, TRAIN_SAMPLE_MAX_ROWS // partitions, ds.count_rows() // partitions))
    model = IndicesBuilder(ds, "vector").train_ivf(partitions, distance_type="cosine", sample_rate=rate)
    return model.centroids.flatten().to_numpy(zero_copy_only=False).reshape(partitions, -1).astype(np.float32)


def _npy_bytes(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


def build_segment(index_uri: str, task: IndexTask) -> bytes:
    """Build the segment ``task`` names (written under the table's ``_indices/``, named by no
    version yet); its metadata, pickled, for :func:`commit_segments`."""
    ds = _dataset(index_uri, task.table, task.version)
    if task.kind in ("BTREE", "BITMAP"):
        segment = ds.create_index_uncommitted(task.column, task.kind, name=task.name, replace=True,
                                              fragment_ids=list(task.fragment_ids))
    else:
        params = dict(task.params)
        extra = {"ivf_centroids": np.load(io.BytesIO(IndexLocation(index_uri).read_bytes(task.centroids)))
                 } if task.centroids else {}
        segment = ds.create_index_uncommitted("vector", task.kind, name=task.name, replace=True, metric="cosine",
                                              fragment_ids=list(task.fragment_ids), **params, **extra)
    return pickle.dumps(segment)


def build_segments_here(index_uri: str, tasks: Sequence[IndexTask]) -> list[bytes]:
    """Every task's segment, built in this process (what a small commit and the tests use)."""
    return [build_segment(index_uri, t) for t in tasks]


def commit_segments(index_uri: str, name: str, version: int, tasks: Sequence[IndexTask],
                    segments: Sequence[bytes]) -> int:
    """Name the built ``segments`` (one per task, in order) in table ``name``: the indexes the
    table has no index of yet in one metadata-only commit, each index it replaces in one more;
    the table's version afterwards."""
    from vdgr_core.store.fragments import lance_module

    lance = lance_module()
    by_name: dict[str, list] = {}
    column: dict[str, str] = {}
    for task, blob in zip(tasks, segments):
        by_name.setdefault(task.name, []).append(pickle.loads(blob))
        column[task.name] = task.column
    if not by_name:
        return version
    ds = _dataset(index_uri, name, version)
    have = _index_names(ds)
    new = [s for idx, segs in sorted(by_name.items()) if idx not in have for s in segs]
    if new:
        ds = lance.LanceDataset.commit(table_uri(index_uri, name), lance.LanceOperation.CreateIndex(
            new_indices=new, removed_indices=[]), read_version=ds.version,
            storage_options=storage_options(str(index_uri)) or None)
    for idx in sorted(i for i in by_name if i in have):
        ds = ds.commit_existing_index_segments(idx, column[idx], by_name[idx])
    return ds.version


def describe_vector_index(index_uri: str, name: str, version: int, params: Mapping[str, int]) -> Optional[dict]:
    """The manifest's description of the vector index of ``name`` at ``version`` (None: none)."""
    ds = _dataset(index_uri, name, version)
    if VECTOR_INDEX not in _index_names(ds):
        return None
    stats = ds.stats.index_stats(VECTOR_INDEX)
    return {"name": VECTOR_INDEX, "column": "vector", "type": stats["index_type"], "metric": "cosine",
            "indexed_rows": int(stats["num_indexed_rows"]), "unindexed_rows": int(stats["num_unindexed_rows"]),
            "params": dict(params)}


__all__ = ["IndexTask", "ROWS_PER_SEGMENT", "SCALAR_INDEXES", "TRAIN_SAMPLE_MAX_ROWS", "VECTOR_INDEX",
           "VECTOR_TABLES", "build_segment", "build_segments_here", "commit_segments", "describe_vector_index",
           "index_tasks", "train_centroids", "vector_params"]
