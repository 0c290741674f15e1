"""Route 3: entity graph + Personalized PageRank.

Query entities (the indexing extractor, plus word n-grams of the question) are matched to entity
nodes by normalized name, and the ``graph_m`` entities nearest to the query vector join them;
the ``graph_n`` contents nearest to the query are content seeds. The subgraph is the seeds and
their neighbours over ``has_entity`` / ``cooccurs`` edges, restricted to contents the user may
see (and entities such contents mention) in the routed domains. PPR with personalization
``beta * entity seeds + (1 - beta) * content seeds`` ranks its contents.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import scipy.sparse as sp

from schemas import tables as T
from schemas.config import QueryConfig
from vdgr_core.entities import extract_terms, norm_tokens
from vdgr_core.query.data import IndexData, QueryScope, top_k
from vdgr_core.query.fusion import Ranked
from vdgr_core.query.ppr import personalized_pagerank
from vdgr_core.query.trace import TraceRecorder

DAMPING = 0.85


@dataclass
class DomainGraph:
    """One domain's content+entity graph: local nodes are contents first, then entities."""

    content_rows: np.ndarray     # global content row of local node i (i < nc)
    entity_rows: np.ndarray      # global entity row of local node nc + j
    adj: sp.csr_matrix           # symmetric weights

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
    return DomainGraph(crow, erow, adj)


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


class GraphRoute:
    """Route 3 with per-domain graphs built on first use and cached."""

    def __init__(self, data: IndexData, config: QueryConfig):
        self._data = data
        self._config = config
        self._graphs: dict[str, DomainGraph] = {}
        self._lock = threading.Lock()

    def graph(self, domain: str) -> DomainGraph:
        with self._lock:
            if domain not in self._graphs:
                self._graphs[domain] = build_domain_graph(self._data, domain)
            return self._graphs[domain]

    def visible_entities(self, scope: QueryScope, domains: Sequence[str]) -> np.ndarray:
        """Entities mentioned by at least one content the user may see (global entity mask)."""
        e = self._data.entities
        cmask = self._data.contents.mask(scope.with_domains(domains))
        out = np.zeros(len(e), dtype=bool)
        for d in domains:
            g = self.graph(d)
            if g.adj.shape[0] == 0:
                continue
            vis = np.zeros(g.adj.shape[0])
            vis[: g.nc] = cmask[g.content_rows]
            reach = g.adj[:, : g.nc] @ vis[: g.nc] if g.nc else np.zeros(g.adj.shape[0])
            out[g.entity_rows[np.asarray(reach[g.nc:]).ravel() > 0]] = True
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

    def search(self, question: str, qvec: np.ndarray, scope: QueryScope, domains: Sequence[str],
               k: int, trace: TraceRecorder) -> Ranked:
        """Run route 3 and return its ranked content rows (route name ``graph``)."""
        data, cfg = self._data, self._config
        c, e = data.contents, data.entities
        sc = scope.with_domains(domains)
        cmask = c.mask(sc)
        emask = self.visible_entities(scope, domains)
        exact = self.matched_entities(question, emask, domains)
        esims = e.vectors @ np.asarray(qvec, dtype=np.float32) if len(e) else np.zeros(0)
        vec = top_k(esims, emask, cfg.graph_m, e.id_rank)
        csims = c.similarities(qvec)
        cseeds = top_k(csims, cmask, cfg.graph_n, c.id_rank)
        # entity personalization: exact name matches and vector candidates, half each
        ew_exact = np.zeros(len(e))
        if exact:
            ex = np.asarray(exact, dtype=np.int64)
            ew_exact[ex] = 1.0 + e.importance[ex]
        ew_vec = np.zeros(len(e))
        if vec:
            vr = np.fromiter((r for r, _ in vec), dtype=np.int64, count=len(vec))
            vs = np.fromiter((s for _, s in vec), dtype=np.float64, count=len(vec))
            ew_vec[vr] = np.maximum(vs, 0.0) ** 2 * (0.1 + e.importance[vr])
        ew = 0.5 * _unit(ew_exact) + 0.5 * _unit(ew_vec) if exact else _unit(ew_vec)
        cw = np.zeros(len(c))
        if cseeds:
            cr = np.fromiter((r for r, _ in cseeds), dtype=np.int64, count=len(cseeds))
            cs = np.fromiter((s for _, s in cseeds), dtype=np.float64, count=len(cseeds))
            cw[cr] = np.maximum(cs, 0.0) + 1e-6
        beta = cfg.graph_beta if ew.sum() > 0 else 0.0
        ew, cw = beta * _unit(ew), (1.0 - beta) * _unit(cw)
        got_rows: list[np.ndarray] = []
        got_vals: list[np.ndarray] = []
        sizes = 0
        for d in domains:
            g = self.graph(d)
            n = g.adj.shape[0]
            if n == 0:
                continue
            p = np.concatenate([cw[g.content_rows], ew[g.entity_rows]])
            mass = p.sum()
            if mass <= 0:
                continue
            visible = np.concatenate([cmask[g.content_rows], emask[g.entity_rows]])
            seeds = (p > 0) & visible
            near = np.asarray(g.adj[seeds].sum(axis=0)).ravel() > 0
            nodes = np.flatnonzero((seeds | near) & visible)
            sizes += len(nodes)
            sub = g.adj[nodes][:, nodes]
            r = personalized_pagerank(sub, p[nodes], damping=DAMPING) * mass
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
                   f"{len(vec)} vector entities, {len(cseeds)} content seeds",
                   matched=[e.name[r] for r in exact[:10]], contents=len(hits))
        return Ranked("graph", hits)
