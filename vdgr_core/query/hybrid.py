"""Route 1: BM25 (tantivy, per routed domain) + dense (in-memory vectors), fused by a convex
combination of normalized scores (or RRF), + re-ranking.

Both searches apply the scope as a pre-filter: the tantivy query carries the access and version
clauses, and the dense search masks rows before its top-k.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from vdgr_core.query.data import IndexData, QueryScope, top_k
from vdgr_core.query.fusion import Ranked, convex, rrf
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


SIBLING_WEIGHT = 0.3     # share of a sibling chunk's score added to its section (parent-document)
_FETCH = 3               # candidates fetched per slot before parent-document grouping


def parent_grouped(hits: list[tuple[int, float]], data: IndexData, k: int) -> list[tuple[int, float]]:
    """Parent-document scoring: rank chunks by the evidence of their whole section.

    A section (the chunks sharing a parent directory node) scores its best chunk's score plus
    ``SIBLING_WEIGHT`` times the scores of its other retrieved chunks: an answer split over
    several chunks of one section is one strong match, not several weak ones. Chunks keep
    their own score as the tie-break inside the section; returns the best ``k`` chunks.
    """
    c = data.contents
    best: dict[tuple, float] = {}
    extra: dict[tuple, float] = {}
    # the parent is the section *within one source file*: directory nodes are merged on
    # their title path, so two files with the same title (two passages both titled "Paris")
    # share a directory node but are different documents
    key = lambda r: (c.source[r], c.parent_id[r] or c.ids[r])   # noqa: E731
    for row, score in hits:
        p = key(row)
        if p not in best:
            best[p] = score
        else:
            extra[p] = extra.get(p, 0.0) + SIBLING_WEIGHT * max(score, 0.0)
    sec = {p: best[p] + extra.get(p, 0.0) for p in best}
    out = sorted(hits, key=lambda h: (-sec[key(h[0])], -h[1], int(c.id_rank[h[0]])))
    return [(r, sec[key(r)]) for r, _ in out[:k]]


def hybrid_search(reader, data: IndexData, question: str, qvec: np.ndarray, scope: QueryScope,
                  domains: Sequence[str], k: int, rrf_k: int, reranker: Reranker, top_n: int,
                  fusion: str = "convex") -> Ranked:
    """BM25 + dense (section-grouped) fused by ``fusion``: ``"convex"`` (equal-weight sum of
    min-max normalized scores, see :func:`convex`) or ``"rrf"``; the best ``top_n`` are
    re-ranked; returns the best ``k``."""
    n = max(k, top_n)
    bm = bm25_search(reader, data, question, scope, domains, n * _FETCH)
    de = dense_search(data, qvec, scope, domains, n * _FETCH)
    lists = [Ranked("bm25", parent_grouped(bm.hits, data, n)),
             Ranked("dense", parent_grouped(de.hits, data, n))]
    if fusion == "rrf":
        fused = rrf(lists, rrf_k, data.contents.id_rank)
    else:
        fused = convex(lists, data.contents.id_rank)
    head = [f.row for f in fused[:top_n]]
    tail = [(f.row, f.score) for f in fused[top_n:]]
    reranked = reranker.rerank(question, head, data.contents)
    if reranker.name == "none":
        reranked = [(f.row, f.score) for f in fused[:top_n]]
    return Ranked("hybrid", (reranked + tail)[:k])
