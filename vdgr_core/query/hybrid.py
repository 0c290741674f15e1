"""Route 1: BM25 (tantivy, per routed domain) + dense (LanceDB vector index, or exact for a
small table) over chunks, grouped into sections and fused (:mod:`vdgr_core.query.fusion`), +
re-ranking of sections.

Both searches apply the scope as a pre-filter: the tantivy query carries the access and version
clauses, the vector search the LanceDB filter of the whole scope (:mod:`vdgr_core.query.vectors`).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from schemas import tables as T
from vdgr_core.query.scope import QueryScope
from vdgr_core.query.vectors import VectorSearch
from vdgr_core.query.view import IndexView
from vdgr_core.query.fusion import FusionMethod, Ranked, SectionList, by_section, fuse
from vdgr_core.query.rerank import Reranker


def bm25_search(reader, data: IndexView, question: str, scope: QueryScope, domains: Sequence[str],
                k: int) -> Ranked:
    """BM25 over the shard of each domain in ``domains``; merged by score, ties by row."""
    c = data.contents
    mask = c.mask(scope.with_domains(domains))
    fetch = k * 3 if scope.collections is not None else k
    hits: list[tuple[int, float]] = []
    for d in domains:
        shard = reader.shard(d)
        if shard is None:
            continue
        found = shard.search(question, fetch, scope.search.with_domains([d]))
        if not found:
            continue
        rows = c.rows_of(d, [chunk_id for chunk_id, _ in found])
        # the shard already filtered access and version; the mask adds the collection choice
        ok = (rows >= 0) & mask[np.maximum(rows, 0)]
        hits += [(int(r), float(s)) for r, (_, s), keep in zip(rows, found, ok) if keep]
    hits.sort(key=lambda h: (-h[1], h[0]))
    return Ranked("bm25", hits[:k])


def dense_search(vectors: VectorSearch, qvec: np.ndarray, scope: QueryScope, domains: Sequence[str],
                 k: int) -> Ranked:
    """Cosine top-k over content vectors, the scope pushed into the search."""
    return Ranked("dense", vectors.search(T.CONTENTS, qvec, scope.with_domains(domains), k))


CHUNKS_PER_SECTION = 4     # chunks fetched per wanted section before grouping


def hybrid_search(reader, data: IndexView, vectors: VectorSearch, question: str, qvec: np.ndarray,
                  scope: QueryScope, domains: Sequence[str], k: int, rrf_k: int, reranker: Reranker, top_n: int,
                  fusion: FusionMethod = "rrf") -> SectionList:
    """Route 1: BM25 and dense chunk searches, each grouped into sections (a section scores
    its best chunk), fused by ``fusion`` (see :mod:`vdgr_core.query.fusion`); the best
    ``top_n`` sections are re-ranked; returns the best ``k`` sections."""
    n = max(k, top_n)
    sec = data.sections
    bm = by_section(bm25_search(reader, data, question, scope, domains, n * CHUNKS_PER_SECTION), sec.of_row, n)
    de = by_section(dense_search(vectors, qvec, scope, domains, n * CHUNKS_PER_SECTION), sec.of_row, n)
    fused = fuse([bm, de], sec.id_rank, fusion, rrf_k, route="hybrid")
    head = reranker.rerank(question, fused[:top_n], data)
    return SectionList("hybrid", (head + fused[top_n:])[:k])
