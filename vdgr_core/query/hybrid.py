"""Route 1: BM25 (tantivy, per routed domain) + dense (LanceDB vector index, or exact for a
small table) over chunks, grouped into sections and fused (:mod:`vdgr_core.query.fusion`), +
re-ranking of sections.

Both searches apply the scope as a pre-filter: the tantivy query carries the access and version
clauses, the vector search the LanceDB filter of the whole scope (:mod:`vdgr_core.query.vectors`).
"""
from __future__ import annotations

import numpy as np

from schemas import tables as T
from schemas.config import FusionSettings
from vdgr_core.query.context import Search
from vdgr_core.query.vectors import VectorSearch
from vdgr_core.query.view import IndexView
from vdgr_core.query.fusion import Ranked, SectionList, by_section, fuse
from vdgr_core.query.rerank import Reranker


def bm25_search(view: IndexView, q: Search, k: int) -> Ranked:
    """BM25 of ``q.text`` over the shard of each of ``q.domains`` (``view.reader``'s shards,
    the access and version clauses of ``q.scope`` in the tantivy query, the collection choice
    checked on the rows); merged by score, ties by row."""
    c = view.contents
    scope, domains = q.scope, q.domains
    mask = c.mask(scope.with_domains(domains))
    fetch = k * 3 if scope.collections is not None else k
    hits: list[tuple[int, float]] = []
    for d in domains:
        shard = view.reader.shard(d)
        if shard is None:
            continue
        found = shard.search(q.text, fetch, scope.search.with_domains([d]))
        if not found:
            continue
        rows = c.rows_of(d, [chunk_id for chunk_id, _ in found])
        # the shard already filtered access and version; the mask adds the collection choice
        ok = (rows >= 0) & mask[np.maximum(rows, 0)]
        hits += [(int(r), float(s)) for r, (_, s), keep in zip(rows, found, ok) if keep]
    hits.sort(key=lambda h: (-h[1], h[0]))
    return Ranked("bm25", hits[:k])


def dense_search(vectors: VectorSearch, q: Search, k: int) -> Ranked:
    """Cosine top-k of ``q.qvec`` over content vectors, the scope pushed into the search."""
    return Ranked("dense", vectors.search(T.CONTENTS, q.qvec, q.scope.with_domains(q.domains), k))


CHUNKS_PER_SECTION = 4     # chunks fetched per wanted section before grouping


def hybrid_search(view: IndexView, vectors: VectorSearch, q: Search, k: int, fusion: FusionSettings,
                  reranker: Reranker) -> SectionList:
    """Route 1: BM25 and dense chunk searches, each grouped into sections (a section scores
    its best chunk), fused by ``fusion.hybrid_fusion`` (see :mod:`vdgr_core.query.fusion`);
    the best ``fusion.rerank_top_n`` sections are re-ranked; returns the best ``k`` sections,
    with the BM25 and dense section lists as its ``parts``.

    Parameters
    ----------
    view : IndexView
        The index (``view.reader`` holds the BM25 shards).
    vectors : VectorSearch
    q : Search
        Text, vector, scope and routed domains.
    k : int
        Sections returned.
    fusion : FusionSettings
    reranker : Reranker
    """
    top_n = fusion.rerank_top_n
    n = max(k, top_n)
    sec = view.sections
    bm = by_section(bm25_search(view, q, n * CHUNKS_PER_SECTION), sec.of_row, n)
    de = by_section(dense_search(vectors, q, n * CHUNKS_PER_SECTION), sec.of_row, n)
    fused = fuse([bm, de], sec.id_rank, fusion.hybrid_fusion, fusion.rrf_k, route="hybrid")
    head = reranker.rerank(q.text, fused[:top_n], view)
    return SectionList("hybrid", (head + fused[top_n:])[:k], parts=(bm, de))
