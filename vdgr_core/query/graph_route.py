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

The graph of a domain is its layout's memory-mapped CSR (vdgr_core/store/domain_layout.py):
passages first, then entities, in local numbers; synonym edges (entity vectors with cosine >=
``QueryConfig.graph_synonym_min``, computed at commit) are added to the walk's subgraph. Only
the rows of the nodes a walk reaches are read.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Optional, Sequence

import numpy as np
import scipy.sparse as sp

from schemas import tables as T
from schemas.config import GraphSettings, slice_of
from vdgr_core.entities import extract_terms, norm_tokens, normalize_term
from vdgr_core.ids import entity_id
from vdgr_core.query.context import Search
from vdgr_core.query.fusion import Ranked
from vdgr_core.query.ppr import personalized_pagerank
from vdgr_core.query.scope import QueryScope
from vdgr_core.query.vectors import VectorSearch
from vdgr_core.query.view import IndexView, csr_gather
from vdgr_core.stopwords import STOP_WORDS
from vdgr_core.store.domain_layout import DomainLayout

DAMPING = 0.5         # HippoRAG 2's restart probability of 0.5: stay close to the seeds
HOPS = 3              # entity seed -> passage -> entity -> passage
MAX_NODES = 50_000    # neighbourhood bound of one walk
_CACHE = 64           # entity visibility arrays kept (per domain and scope)


def query_norms(question: str) -> list[str]:
    """Normalized names to look up: extracted terms, then word 1-4 grams of the question.

    A single letter or a stopword names nothing: the option entities ``-i`` and ``-a``
    normalize to ``i`` and ``a``, which every "how do I ..." question writes.

    Examples
    --------
    >>> norms = query_norms("How do I merge a branch?")
    >>> "merge" in norms, "branch" in norms, "i" in norms, "a" in norms
    (True, True, False, False)
    """
    out: dict[str, None] = {}
    for t in extract_terms(question, max_terms=16):
        if t.norm:
            out.setdefault(t.norm, None)
    toks = norm_tokens(question)
    for n in (4, 3, 2, 1):
        for i in range(len(toks) - n + 1):
            out.setdefault(normalize_term(" ".join(toks[i:i + n])), None)
    return [n for n in out if len(n) > 1 and n not in STOP_WORDS]


def seed_weights(seeds: Sequence[tuple[int, float]]) -> dict[int, float]:
    """Restart weight of each passage seed: its score min-max normalized over the seeds (the
    weakest keeps 1e-3), so the best first-hop passage holds most of the mass."""
    weights: dict[int, float] = {}
    if not seeds:
        return weights
    sims = np.array([s for _, s in seeds])
    lo, hi = float(sims.min()), float(sims.max())
    for r, s in seeds:
        weights[r] = max(weights.get(r, 0.0), (s - lo) / (hi - lo) + 1e-3 if hi > lo else 1.0)
    return weights


def _unit(w: np.ndarray) -> np.ndarray:
    s = w.sum()
    return w / s if s > 0 else w


def _neighbours(lay: DomainLayout, nodes: np.ndarray, synonyms: bool) -> np.ndarray:
    """Local nodes adjacent to ``nodes`` (graph edges, plus synonym edges of entity nodes), with
    repeats: an entity mentioned by many passages lists them all, and the caller marks them in
    a mask of the domain's nodes (linear, where a sort or hash of the list took most of the walk's
    time)."""
    g = lay.graph
    out, _ = csr_gather(g.indptr, g.indices, nodes)
    if synonyms and lay.ne:
        ent = nodes[nodes >= lay.nc] - lay.nc
        syn, _ = csr_gather(lay.synonyms.indptr, lay.synonyms.indices, ent)
        out = np.concatenate([np.asarray(out, dtype=np.int64), np.asarray(syn, dtype=np.int64) + lay.nc])
    return np.asarray(out, dtype=np.int64)


def neighbourhood(lay: DomainLayout, seeds: np.ndarray, allowed: np.ndarray, synonyms: bool) -> np.ndarray:
    """Local nodes within :data:`HOPS` hops of ``seeds`` through ``allowed`` nodes (bounded by
    :data:`MAX_NODES`: a hop that would pass it is not taken)."""
    reached = np.zeros(len(allowed), dtype=bool)
    reached[seeds] = True
    reached &= allowed
    frontier = np.flatnonzero(reached)
    count = len(frontier)
    for _ in range(HOPS):
        if count >= MAX_NODES or not len(frontier):
            break
        new = np.zeros(len(allowed), dtype=bool)
        new[_neighbours(lay, frontier, synonyms)] = True
        nxt = np.flatnonzero(new & allowed & ~reached)
        if count + len(nxt) > MAX_NODES:
            break
        reached[nxt] = True
        count += len(nxt)
        frontier = nxt
    return np.flatnonzero(reached)


def subgraph(lay: DomainLayout, nodes: np.ndarray, synonym_min: Optional[float]) -> sp.csr_matrix:
    """The weighted graph among ``nodes`` (sorted local nodes), with synonym edges of at least
    ``synonym_min`` between its entity nodes (None: without synonyms)."""
    sub = lay.graph[nodes][:, nodes].astype(np.float64)
    if synonym_min is None or not lay.ne:
        return sub.tocsr()
    first_entity = int(np.searchsorted(nodes, lay.nc))
    ent = nodes[first_entity:] - lay.nc
    if not len(ent):
        return sub.tocsr()
    syn = lay.synonyms[ent][:, ent].tocoo()
    keep = syn.data >= synonym_min
    if not keep.any():
        return sub.tocsr()
    extra = sp.csr_matrix((syn.data[keep].astype(np.float64),
                           (syn.row[keep] + first_entity, syn.col[keep] + first_entity)), shape=sub.shape)
    return (sub + extra).tocsr()


class _EntityMask:
    """``emask[entity_row]``: may the caller see this entity (a readable passage mentions it)."""

    def __init__(self, route: "GraphRoute", scope: QueryScope, domains: Sequence[str]):
        self._route, self._scope, self._domains = route, scope, set(domains)

    def __getitem__(self, row: int) -> bool:
        d, local = self._route.data.locate("entity", int(row))
        return d in self._domains and bool(self._route.visible_local(self._scope, d)[local])


class GraphRoute:
    """Route 3 over the domains' layouts (has_entity and co-occurrence adjacency plus synonym
    edges of at least ``GraphSettings.synonym_min``).

    Parameters
    ----------
    data : IndexView
    vectors : VectorSearch
        The dense seeds when no first-hop seeds are given.
    config : GraphSettings
        Seeds ``n``, entity restart share ``beta``, ``synonym_min`` (a ``QueryConfig`` is
        accepted and gives its slice).
    """

    def __init__(self, data: IndexView, vectors: VectorSearch, config: GraphSettings):
        self.data = data
        self._vectors = vectors
        self._config = slice_of(config, GraphSettings)     # a QueryConfig gives its slice
        self._visible: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def _synonym_min(self, lay: DomainLayout) -> Optional[float]:
        want = self._config.synonym_min
        return None if want > 1.0 else max(want, lay.synonym_min)

    def passages(self, lay: DomainLayout, entities: np.ndarray) -> np.ndarray:
        """Passages mentioning each local entity (its content neighbours)."""
        values, owner = csr_gather(lay.graph.indptr, lay.graph.indices, np.asarray(entities, dtype=np.int64) + lay.nc)
        return np.bincount(owner[np.asarray(values) < lay.nc], minlength=len(entities)).astype(np.int64)

    def visible_local(self, scope: QueryScope, domain: str) -> np.ndarray:
        """Entities of ``domain`` mentioned by a passage in ``scope`` (local order; cached)."""
        key = (domain, scope.key())
        with self._lock:
            got = self._visible.get(key)
        if got is not None:
            return got
        lay = self.data.layout(domain)
        cmask = self.data.contents.mask(scope).local(domain)
        out = np.zeros(lay.ne, dtype=bool)
        values, _ = csr_gather(lay.graph.indptr, lay.graph.indices, np.flatnonzero(cmask))
        values = np.asarray(values, dtype=np.int64)
        out[values[values >= lay.nc] - lay.nc] = True
        out.setflags(write=False)
        with self._lock:
            self._visible[key] = out
            while len(self._visible) > _CACHE:
                self._visible.popitem(last=False)
        return out

    def visible_entities(self, q: Search) -> _EntityMask:
        """Entities mentioned by at least one content the user may see in ``q``'s domains."""
        return _EntityMask(self, q.scope.with_domains(q.domains), q.domains)

    def matched_entities(self, q: Search, emask) -> list[int]:
        """Visible entity rows (``emask``) whose normalized name occurs in ``q``'s text, in
        ``q``'s domains."""
        norms = query_norms(q.text)
        found: dict[tuple[int, int], int] = {}
        for di, d in enumerate(q.domains):
            if d not in self.data.code:
                continue
            rows = self.data.entities.rows_of(d, [entity_id(d, n) for n in norms])
            for ni, r in enumerate(rows):
                if r >= 0 and emask[int(r)]:
                    found.setdefault((ni, di), int(r))
        out: list[int] = []
        for key in sorted(found):               # question order, then domain order (as before)
            if found[key] not in out:
                out.append(found[key])
        return out

    def neighbours(self, entity_rows: Sequence[int], emask, n: int) -> list[int]:
        """The ``n`` strongest co-occurrence neighbours of ``entity_rows`` (visible only)."""
        acc: dict[int, float] = {}
        given = set(int(r) for r in entity_rows)
        for r in entity_rows:
            d, local = self.data.locate("entity", int(r))
            lay = self.data.layout(d)
            g = lay.graph
            node = lay.nc + local
            lo, hi = int(g.indptr[node]), int(g.indptr[node + 1])
            for j, w in zip(np.asarray(g.indices[lo:hi]), np.asarray(g.data[lo:hi])):
                if j >= lay.nc:
                    er = self.data.to_global("entity", d, int(j) - lay.nc)
                    if er not in given and emask[er]:
                        acc[er] = acc.get(er, 0.0) + float(w)
        return sorted(acc, key=lambda r: (-acc[r], r))[:n]

    def entities_of(self, content_rows: Sequence[int], emask) -> list[int]:
        """Visible entity rows mentioned by ``content_rows``, most specific first.

        Specificity is ``1 / (passages mentioning the entity)``: a name found in few passages
        identifies a bridge better than a generic word found everywhere.
        """
        spec: dict[int, float] = {}
        for r in content_rows:
            d, local = self.data.locate("content", int(r))
            lay = self.data.layout(d)
            g = lay.graph
            nbrs = np.asarray(g.indices[int(g.indptr[local]):int(g.indptr[local + 1])], dtype=np.int64)
            ents = nbrs[nbrs >= lay.nc] - lay.nc
            if not len(ents):
                continue
            counts = self.passages(lay, ents)
            for j, c in zip(ents, counts):
                er = self.data.to_global("entity", d, int(j))
                if emask[er]:
                    spec[er] = max(spec.get(er, 0.0), 1.0 / max(1, int(c)))
        return sorted(spec, key=lambda r: (-spec[r], r))

    def search(self, q: Search, k: int) -> Ranked:
        """Run route 3 for ``q`` and return its best ``k`` content rows (route name ``graph``).

        ``q.first_hop`` (route 1's fused sections, best first) gives the passage seeds: the best
        passage of each section, with its score; without it the ``graph_n`` passages nearest to
        ``q.qvec`` seed the walk. Seeds outside the scope are dropped (the walk never starts
        from a hidden passage).
        """
        data, cfg = self.data, self._config
        c = data.contents
        domains = q.domains
        sc = q.scope.with_domains(domains)
        cmask = c.mask(sc)
        emask = self.visible_entities(q)
        exact = self.matched_entities(q, emask)
        seeds = None if q.first_hop is None else [(h.row, h.score) for h in q.first_hop]
        if seeds is None:
            cseeds = self._vectors.search(T.CONTENTS, q.qvec, sc, cfg.n)
        else:
            rows = np.array([int(r) for r, _ in seeds], dtype=np.int64)
            ok = cmask[rows] if len(rows) else np.zeros(0, dtype=bool)
            cseeds = [(int(r), float(s)) for (r, s), keep in zip(seeds, ok) if keep][: cfg.n]
        weights = seed_weights(cseeds)
        got_rows: list[np.ndarray] = []
        got_vals: list[np.ndarray] = []
        sizes = 0
        for d in domains:
            if d not in data.code:
                continue
            lay = data.layout(d)
            n = lay.nc + lay.ne
            if n == 0:
                continue
            cbase, ebase = data.to_global("content", d, 0), data.to_global("entity", d, 0)
            pw = np.zeros(lay.nc)
            for r, w in weights.items():
                if cbase <= r < cbase + lay.nc:
                    pw[r - cbase] = w
            ew = np.zeros(lay.ne)
            ents = np.array([r - ebase for r in exact if ebase <= r < ebase + lay.ne], dtype=np.int64)
            if len(ents):
                counts = self.passages(lay, ents)
                ew[ents[counts > 0]] = 1.0 / counts[counts > 0]
            beta = cfg.beta if ew.sum() > 0 else 0.0
            p = np.concatenate([(1.0 - beta) * _unit(pw), beta * _unit(ew)])
            if p.sum() <= 0:
                continue
            visible = np.concatenate([cmask.local(d), self.visible_local(sc, d)])
            syn_min = self._synonym_min(lay)
            nodes = neighbourhood(lay, np.flatnonzero(p > 0), visible, syn_min is not None)
            sizes += len(nodes)
            r = personalized_pagerank(subgraph(lay, nodes, syn_min), p[nodes], damping=DAMPING)
            is_content = nodes < lay.nc
            got_rows.append(nodes[is_content] + cbase)
            got_vals.append(r[is_content])
        hits = []
        if got_rows:
            rows = np.concatenate(got_rows)
            vals = np.concatenate(got_vals)
            order = np.lexsort((rows, -vals))[:k]
            hits = [(int(rows[i]), float(vals[i])) for i in order]
        q.trace.step("graph", f"PPR over {sizes} nodes: {len(exact)} matched entities, "
                     f"{len(cseeds)} passage seeds ({'route 1' if seeds is not None else 'dense'})",
                     matched=[data.entities.name[r] for r in exact[:10]], contents=len(hits))
        return Ranked("graph", hits)
