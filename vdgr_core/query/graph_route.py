"""Route 3: the entity graph as a multi-hop step (Personalized PageRank, HippoRAG 2 style).

The graph of a domain has passage (content) nodes and entity nodes; ``has_entity`` edges join a
passage to the entities it mentions and ``cooccurs`` edges join entities that share sentences.
A query seeds the walk in two ways (Gutiérrez et al., "From RAG to Memory", 2025):

- **entity seeds**: entities whose normalized name occurs in the question (the indexing
  extractor's terms and the question's word n-grams), each weighted by its specificity
  ``1 / (number of passages mentioning it)``, so "journal" weighs little and
  "journal of psychotherapy integration" a lot;
- **passage seeds**: the best passage of each of the first ``graph_n`` sections of route 1's
  fused list when the retriever hands them over (the default composition: the walk starts
  from the first-hop evidence, as HippoRAG 2 starts from its dense hits), otherwise the
  ``graph_n`` passages nearest to the query vector; weighted by their min-max normalized
  score, so the best first-hop passage holds most of the restart mass.

``graph_beta`` splits the restart mass between the two (entities ``beta``, passages
``1 - beta``); without an entity seed all of it goes to the passages. The walk (damping
:data:`DAMPING`) runs on the seeds' neighbourhood up to :data:`HOPS` hops (bounded by
:data:`MAX_NODES`), restricted to passages the user may see and entities they mention, so a
passage two hops away (seed passage -> shared entity -> passage) can rank: the bridge of a
multi-hop question. Passages are ranked by their PageRank mass.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
import scipy.sparse as sp

from schemas import tables as T
from schemas.config import QueryConfig
from vdgr_core.entities import extract_terms, norm_tokens
from vdgr_core.query.data import IndexData, QueryScope, top_k
from vdgr_core.query.fusion import Ranked
from vdgr_core.query.ppr import personalized_pagerank
from vdgr_core.query.trace import TraceRecorder

DAMPING = 0.5         # HippoRAG 2's restart probability of 0.5: stay close to the seeds
HOPS = 3              # entity seed -> passage -> entity -> passage
MAX_NODES = 50_000    # neighbourhood bound of one walk


@dataclass
class DomainGraph:
    """One domain's content+entity graph: local nodes are contents first, then entities."""

    content_rows: np.ndarray     # global content row of local node i (i < nc)
    entity_rows: np.ndarray      # global entity row of local node nc + j
    adj: sp.csr_matrix           # symmetric weights
    passages_of_entity: np.ndarray   # per local entity j: passages mentioning it

    @property
    def nc(self) -> int:
        return len(self.content_rows)


def build_domain_graph(data: IndexData, domain: str) -> DomainGraph:
    """Build the symmetric has_entity + cooccurs adjacency of ``domain``."""
    c, e, g = data.contents, data.entities, data.edges
    crow = np.flatnonzero(c.domain == domain)
    erow = np.flatnonzero(e.domain == domain)
    cl = {int(r): i for i, r in enumerate(crow)}
    el = {int(r): len(crow) + j for j, r in enumerate(erow)}
    src, dst, w = [], [], []
    for i in np.flatnonzero((g.domain == domain) & np.isin(g.kind, [T.HAS_ENTITY, T.COOCCURS])):
        if g.kind[i] == T.HAS_ENTITY:
            a = cl.get(c.index.get(str(g.src[i]), -1))
        else:
            a = el.get(e.index.get(str(g.src[i]), -1))
        b = el.get(e.index.get(str(g.dst[i]), -1))
        if a is None or b is None or a == b:
            continue
        src += [a, b]
        dst += [b, a]
        w += [float(g.weight[i]) or 1.0] * 2
    n = len(crow) + len(erow)
    adj = sp.csr_matrix((w, (src, dst)), shape=(n, n), dtype=np.float64)
    adj.sum_duplicates()
    nc = len(crow)
    passages = np.asarray((adj[nc:, :nc] > 0).sum(axis=1)).ravel() if n > nc else np.zeros(0)
    return DomainGraph(crow, erow, adj, passages.astype(np.int64))


def query_norms(question: str) -> list[str]:
    """Normalized names to look up: extracted terms, then word 1-4 grams of the question."""
    out: dict[str, None] = {}
    for t in extract_terms(question, max_terms=16):
        if t.norm:
            out.setdefault(t.norm, None)
    toks = norm_tokens(question)
    for n in (4, 3, 2, 1):
        for i in range(len(toks) - n + 1):
            out.setdefault(" ".join(toks[i:i + n]), None)
    return list(out)


def _unit(w: np.ndarray) -> np.ndarray:
    s = w.sum()
    return w / s if s > 0 else w


def _neighbourhood(adj: sp.csr_matrix, seeds: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """Nodes within :data:`HOPS` hops of ``seeds`` through ``allowed`` nodes (bounded)."""
    reached = seeds & allowed
    frontier = reached.copy()
    for _ in range(HOPS):
        if reached.sum() >= MAX_NODES or not frontier.any():
            break
        nxt = (np.asarray(adj[frontier].sum(axis=0)).ravel() > 0) & allowed & ~reached
        if reached.sum() + nxt.sum() > MAX_NODES:
            break
        reached |= nxt
        frontier = nxt
    return np.flatnonzero(reached)


SYNONYMS_PER_ENTITY = 5     # strongest synonym edges kept per entity
_BLOCK = 2048               # entity rows per similarity block


def synonym_edges(vectors: np.ndarray, min_sim: float, per_node: int = SYNONYMS_PER_ENTITY) -> sp.csr_matrix:
    """Symmetric edges between entities whose vectors are near-identical (HippoRAG's synonymy
    edges): cosine >= ``min_sim``, at most ``per_node`` per entity, weighted by the cosine.

    Rows are compared block by block, so memory stays ``_BLOCK x n``.
    """
    n = len(vectors)
    if n < 2 or min_sim > 1.0:
        return sp.csr_matrix((n, n), dtype=np.float64)
    v = np.asarray(vectors, dtype=np.float32)
    src, dst, w = [], [], []
    for start in range(0, n, _BLOCK):
        sims = v[start:start + _BLOCK] @ v.T
        sims[np.arange(sims.shape[0]), np.arange(start, start + sims.shape[0])] = -1.0   # no self edge
        for i, j in zip(*np.nonzero(sims >= min_sim)):
            src.append(start + int(i))
            dst.append(int(j))
            w.append(float(sims[i, j]))
    if not src:
        return sp.csr_matrix((n, n), dtype=np.float64)
    src_a, dst_a, w_a = np.array(src), np.array(dst), np.array(w)
    # the strongest per_node of each entity (ties by index), then made symmetric
    order = np.lexsort((dst_a, -w_a, src_a))
    src_a, dst_a, w_a = src_a[order], dst_a[order], w_a[order]
    first = np.r_[0, np.flatnonzero(np.diff(src_a)) + 1]
    rank = np.arange(len(src_a)) - np.repeat(first, np.diff(np.r_[first, len(src_a)]))
    keep = rank < per_node
    m = sp.csr_matrix((w_a[keep], (src_a[keep], dst_a[keep])), shape=(n, n), dtype=np.float64)
    return m.maximum(m.T).tocsr()


def with_synonyms(g: DomainGraph, entity_vectors: np.ndarray, min_sim: float) -> DomainGraph:
    """``g`` plus synonym edges among its entities (``entity_vectors``: global entity rows)."""
    ne = len(g.entity_rows)
    if ne < 2 or min_sim > 1.0:
        return g
    syn = synonym_edges(entity_vectors[g.entity_rows], min_sim)
    if syn.nnz == 0:
        return g
    pad = sp.block_diag((sp.csr_matrix((g.nc, g.nc)), syn), format="csr")   # entities follow contents
    return DomainGraph(g.content_rows, g.entity_rows, (g.adj + pad).tocsr(), g.passages_of_entity)


class GraphRoute:
    """Route 3 with per-domain graphs built on first use and cached (the stored has_entity and
    co-occurrence adjacency plus synonym edges, ``QueryConfig.graph_synonym_min``)."""

    def __init__(self, data: IndexData, config: QueryConfig):
        self._data = data
        self._config = config
        self._graphs: dict[str, DomainGraph] = {}
        self._lock = threading.Lock()

    def graph(self, domain: str) -> DomainGraph:
        with self._lock:
            if domain not in self._graphs:
                self._graphs[domain] = with_synonyms(build_domain_graph(self._data, domain),
                                                     self._data.entities.vectors, self._config.graph_synonym_min)
            return self._graphs[domain]

    def visible_entities(self, scope: QueryScope, domains: Sequence[str]) -> np.ndarray:
        """Entities mentioned by at least one content the user may see (global entity mask)."""
        e = self._data.entities
        cmask = self._data.contents.mask(scope.with_domains(domains))
        out = np.zeros(len(e), dtype=bool)
        for d in domains:
            g = self.graph(d)
            if g.adj.shape[0] == 0 or g.nc == 0:
                continue
            reach = g.adj[g.nc:, : g.nc] @ cmask[g.content_rows].astype(np.float64)
            out[g.entity_rows[np.asarray(reach).ravel() > 0]] = True
        return out

    def matched_entities(self, question: str, emask: np.ndarray, domains: Sequence[str]) -> list[int]:
        """Visible entity rows whose normalized name occurs in the question."""
        e = self._data.entities
        rows = []
        for norm in query_norms(question):
            for d in domains:
                r = e.by_norm.get((d, norm))
                if r is not None and emask[r] and r not in rows:
                    rows.append(r)
        return rows

    def neighbours(self, entity_rows: Sequence[int], emask: np.ndarray, n: int) -> list[int]:
        """The ``n`` strongest co-occurrence neighbours of ``entity_rows`` (visible only)."""
        e = self._data.entities
        acc: dict[int, float] = {}
        for r in entity_rows:
            g = self.graph(str(e.domain[r]))
            local = g.nc + int(np.flatnonzero(g.entity_rows == r)[0])
            row = g.adj.getrow(local)
            for j, w in zip(row.indices, row.data):
                if j >= g.nc:
                    er = int(g.entity_rows[j - g.nc])
                    if emask[er] and er not in entity_rows:
                        acc[er] = acc.get(er, 0.0) + float(w)
        return sorted(acc, key=lambda r: (-acc[r], int(e.id_rank[r])))[:n]

    def entities_of(self, content_rows: Sequence[int], emask: np.ndarray) -> list[int]:
        """Visible entity rows mentioned by ``content_rows``, most specific first.

        Specificity is ``1 / (passages mentioning the entity)``: a name found in few passages
        identifies a bridge better than a generic word found everywhere.
        """
        c, e = self._data.contents, self._data.entities
        spec: dict[int, float] = {}
        for r in content_rows:
            g = self.graph(str(c.domain[r]))
            i = int(np.searchsorted(g.content_rows, r))
            if i >= g.nc or int(g.content_rows[i]) != int(r):
                continue
            row = g.adj.getrow(i)
            for j in row.indices:
                if j < g.nc:
                    continue
                er = int(g.entity_rows[j - g.nc])
                if emask[er]:
                    spec[er] = max(spec.get(er, 0.0), 1.0 / max(1, int(g.passages_of_entity[j - g.nc])))
        return sorted(spec, key=lambda r: (-spec[r], int(e.id_rank[r])))

    def search(self, question: str, qvec: np.ndarray, scope: QueryScope, domains: Sequence[str],
               k: int, trace: TraceRecorder, seeds: Optional[Sequence[tuple[int, float]]] = None) -> Ranked:
        """Run route 3 and return its ranked content rows (route name ``graph``).

        ``seeds`` are (content row, score) passage seeds, best first (route 1's first
        sections); without them the ``graph_n`` passages nearest to ``qvec`` seed the walk.
        Seeds outside the scope are dropped (the walk never starts from a hidden passage).
        """
        data, cfg = self._data, self._config
        c, e = data.contents, data.entities
        cmask = c.mask(scope.with_domains(domains))
        emask = self.visible_entities(scope, domains)
        exact = self.matched_entities(question, emask, domains)
        if seeds is None:
            cseeds = top_k(c.similarities(qvec), cmask, cfg.graph_n, c.id_rank)
        else:
            cseeds = [(int(r), float(s)) for r, s in seeds if cmask[int(r)]][: cfg.graph_n]
        cw = np.zeros(len(c))
        if cseeds:
            sims = np.array([s for _, s in cseeds])
            lo, hi = float(sims.min()), float(sims.max())
            for (r, s) in cseeds:
                cw[r] = max(cw[r], (s - lo) / (hi - lo) + 1e-3 if hi > lo else 1.0)
        got_rows: list[np.ndarray] = []
        got_vals: list[np.ndarray] = []
        sizes = 0
        for d in domains:
            g = self.graph(d)
            n = g.adj.shape[0]
            if n == 0:
                continue
            ew = np.zeros(n - g.nc)
            local = {int(r): j for j, r in enumerate(g.entity_rows)}
            for r in exact:
                j = local.get(int(r))
                if j is not None and g.passages_of_entity[j] > 0:
                    ew[j] = 1.0 / g.passages_of_entity[j]
            pw = cw[g.content_rows]
            beta = cfg.graph_beta if ew.sum() > 0 else 0.0
            p = np.concatenate([(1.0 - beta) * _unit(pw), beta * _unit(ew)])
            if p.sum() <= 0:
                continue
            visible = np.concatenate([cmask[g.content_rows], emask[g.entity_rows]])
            nodes = _neighbourhood(g.adj, (p > 0) & visible, visible)
            sizes += len(nodes)
            sub = g.adj[nodes][:, nodes]
            r = personalized_pagerank(sub, p[nodes], damping=DAMPING)
            is_content = nodes < g.nc
            got_rows.append(g.content_rows[nodes[is_content]])
            got_vals.append(r[is_content])
        hits = []
        if got_rows:
            rows = np.concatenate(got_rows)
            vals = np.concatenate(got_vals)
            order = np.lexsort((c.id_rank[rows], -vals))[:k]
            hits = [(int(rows[i]), float(vals[i])) for i in order]
        trace.step("graph", f"PPR over {sizes} nodes: {len(exact)} matched entities, "
                   f"{len(cseeds)} passage seeds ({'route 1' if seeds is not None else 'dense'})",
                   matched=[e.name[r] for r in exact[:10]], contents=len(hits))
        return Ranked("graph", hits)
