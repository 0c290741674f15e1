"""LanceDB indexes built at commit: a vector index per vector table, scalar indexes on ids and
filter columns, so the query side searches and looks up rows without loading tables.

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

An update appends rows; they are searched exactly (flat) until they exceed
``vector_index_retrain_share`` of the indexed rows, when the index is trained again.

Scalar indexes (same names as their columns + ``_idx``): BTree on ids, bitmap on low-cardinality
filter columns (``domain``, ``version``, ``kind``, ``public``), once a table has
``scalar_index_min_rows`` rows. Every index build commits a table version; the manifest names
the last one.
"""
from __future__ import annotations

import logging
from typing import Optional

from lancedb.index import Bitmap, BTree, HnswSq, IvfPq, IvfSq

from schemas import tables as T
from schemas.config import StoreConfig

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
}


def _index_names(table) -> set[str]:
    return {i.name for i in table.list_indices()}


def ensure_scalar_indexes(name: str, table, config: StoreConfig, rows: int) -> list[str]:
    """Create the scalar indexes of ``name`` that are missing (all once the table is large)."""
    wanted = SCALAR_INDEXES.get(name, {})
    if rows < config.scalar_index_min_rows or not wanted:
        return []
    have = _index_names(table)
    made = []
    for column, kind in wanted.items():
        idx = f"{column}_idx"
        if idx in have:
            stats = table.index_stats(idx)
            if stats is None or stats.num_unindexed_rows * 10 <= max(1, stats.num_indexed_rows):
                continue
        table.create_index(column, config=BTree() if kind == "BTREE" else Bitmap(), name=idx, replace=True)
        made.append(idx)
    return made


def _vector_config(config: StoreConfig, rows: int, dim: int):
    partitions = max(1, rows // config.vector_rows_per_partition)
    if config.vector_index == "ivf_pq":
        sub = config.pq_sub_vectors or max(1, dim // 8)
        return IvfPq(distance_type="cosine", num_partitions=partitions, num_sub_vectors=sub), {
            "num_partitions": partitions, "num_sub_vectors": sub}
    if config.vector_index == "ivf_sq":
        return IvfSq(distance_type="cosine", num_partitions=partitions), {"num_partitions": partitions}
    return HnswSq(distance_type="cosine", num_partitions=partitions, m=config.hnsw_m,
                  ef_construction=config.hnsw_ef_construction), {
        "num_partitions": partitions, "m": config.hnsw_m, "ef_construction": config.hnsw_ef_construction}


def ensure_vector_index(name: str, table, config: StoreConfig, rows: int, dim: int,
                        previous: Optional[dict] = None) -> Optional[dict]:
    """Create (or re-train) the vector index of ``table`` when it is due; returns its
    description for the manifest, or None when the table has no vector index. ``previous``:
    the description the last manifest recorded (its training parameters are kept when the
    index is not trained again)."""
    if config.vector_index == "none" or name not in VECTOR_TABLES:
        return None
    exists = VECTOR_INDEX in _index_names(table)
    if rows < config.vector_index_min_rows and not exists:
        return None
    stats = table.index_stats(VECTOR_INDEX) if exists else None
    retrain = stats is None or stats.num_unindexed_rows > config.vector_index_retrain_share * max(
        1, stats.num_indexed_rows)
    index_config, params = _vector_config(config, rows, dim)
    if retrain:
        _log.info("building the %s vector index of %s (%d rows)", config.vector_index, name, rows)
        table.create_index("vector", config=index_config, replace=True, name=VECTOR_INDEX)
        stats = table.index_stats(VECTOR_INDEX)
    elif previous:
        params = previous.get("params", params)
    return {"name": VECTOR_INDEX, "column": "vector", "type": stats.index_type, "metric": "cosine",
            "indexed_rows": int(stats.num_indexed_rows), "unindexed_rows": int(stats.num_unindexed_rows),
            "params": params}
