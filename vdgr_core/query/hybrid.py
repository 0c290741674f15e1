"""Route 1: BM25 (tantivy, per routed domain) + dense (in-memory vectors) over chunks, grouped
into sections and fused (:mod:`vdgr_core.query.fusion`), + re-ranking of sections.

Both searches apply the scope as a pre-filter: the tantivy query carries the access and version
clauses, and the dense search masks rows before its top-k.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from vdgr_core.query.data import IndexData, QueryScope, top_k
from vdgr_core.query.fusion import FusionMethod, Ranked, SectionList, by_section, fuse
from vdgr_core.query.rerank import Reranker


def bm25_search(reader, data: IndexData, question: str, scope: QueryScope, domains: Sequence[str],
                k: int) -> Ranked:
    """BM25 over the shard of each domain in ``domains``; merged by score, ties by chunk id."""
    c = data.contents
    mask = c.mask(scope.with_domains(domains))
    fetch = k * 3 if scope.collections is not None else k
    hits: list[tuple[int, float]] = []
    for d in domains:
        shard = reader.shard(d)
        if shard is None:
            continue
        for chunk_id, score in shard.search(question, fetch, scope.search.with_domains([d])):
            row = c.index.get(chunk_id)
            # the shard already filtered access and version; the mask adds the collection choice
            if row is not None and mask[row]:
                hits.append((row, score))
    hits.sort(key=lambda h: (-h[1], int(c.id_rank[h[0]])))
    return Ranked("bm25", hits[:k])


def dense_search(data: IndexData, qvec: np.ndarray, scope: QueryScope, domains: Sequence[str], k: int) -> Ranked:
    """Cosine top-k over content vectors, restricted to the scope before selection."""
    c = data.contents
    mask = c.mask(scope.with_domains(domains))
    return Ranked("dense", top_k(c.similarities(qvec), mask, k, c.id_rank))


CHUNKS_PER_SECTION = 4     # chunks fetched per wanted section before grouping


def hybrid_search(reader, data: IndexData, question: str, qvec: np.ndarray, scope: QueryScope,
                  domains: Sequence[str], k: int, rrf_k: int, reranker: Reranker, top_n: int,
                  fusion: FusionMethod = "rrf") -> SectionList:
    """Route 1: BM25 and dense chunk searches, each grouped into sections (a section scores
    its best chunk), fused by ``fusion`` (see :mod:`vdgr_core.query.fusion`); the best
    ``top_n`` sections are re-ranked; returns the best ``k`` sections."""
    n = max(k, top_n)
    sec = data.sections
    bm = by_section(bm25_search(reader, data, question, scope, domains, n * CHUNKS_PER_SECTION), sec.of_row, n)
    de = by_section(dense_search(data, qvec, scope, domains, n * CHUNKS_PER_SECTION), sec.of_row, n)
    fused = fuse([bm, de], sec.id_rank, fusion, rrf_k, route="hybrid")
    head = reranker.rerank(question, fused[:top_n], data)
    return SectionList("hybrid", (head + fused[top_n:])[:k])
