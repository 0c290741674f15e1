"""Composition of the retrieval routes: parallel (all routes) or sequential (escalate).

Every route returns sections (:class:`vdgr_core.query.fusion.SectionList`); the routes' lists
are fused by one method (``QueryConfig.route_fusion``) with per-route weights
(``QueryConfig.route_weights``).

The graph route is a second hop, not a rival list: when route 1 (BM25, dense or hybrid) runs
too, the walk starts from route 1's fused sections (HippoRAG 2 seeds its PageRank with the
dense hits) and its ranking *replaces* route 1's list in the fusion, behind route 1's best
section, which stays first (``QueryConfig.graph_keep_head``). The first-hop evidence keeps the
restart mass, so it stays near the top, and passages that share entities with it (the bridges
of a multi-hop question) move up behind it. Fusing the walk as one more list beside
route 1 instead counted route 1's evidence twice and lost the walk's deep recall
(bench/fusion_study.py).
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from schemas.config import QueryConfig
from vdgr_core.query.scope import QueryScope
from vdgr_core.query.vectors import VectorSearch
from vdgr_core.query.view import IndexView
from vdgr_core.query.fusion import SectionHit, SectionList, by_section, fuse, with_first_hop
from vdgr_core.query.graph_route import GraphRoute
from vdgr_core.query.hybrid import CHUNKS_PER_SECTION, bm25_search, dense_search, hybrid_search
from vdgr_core.query.reflection import judge
from vdgr_core.query.rerank import Reranker
from vdgr_core.query.toc import toc_search
from vdgr_core.query.toc_index import LabelIndex
from vdgr_core.query.trace import TraceRecorder

ROUTE1 = ("bm25", "dense", "hybrid")
DEPTH_PER_K = 3          # sections each route returns per evidence item wanted


class Retriever:
    """Runs the configured routes for one (possibly refined) query and fuses them."""

    def __init__(self, reader, data: IndexView, vectors: VectorSearch, config: QueryConfig, reranker: Reranker,
                 graph: GraphRoute, llm=None):
        self._reader = reader
        self._data = data
        self._vectors = vectors
        self._config = config
        self._reranker = reranker
        self._graph = graph
        self._llm = llm
        self._labels = None

    @property
    def labels(self) -> LabelIndex:
        """The TOC label index, built on first use."""
        if self._labels is None:
            self._labels = LabelIndex(self._data)
        return self._labels

    def depth(self) -> int:
        """Sections each route returns for fusion."""
        return max(self._config.k * DEPTH_PER_K, self._config.reranker.top_n)

    def run_route(self, route: str, question: str, qvec: np.ndarray, scope: QueryScope,
                  domains: Sequence[str], trace: TraceRecorder,
                  first_hop: Optional[Sequence[SectionHit]] = None) -> SectionList:
        """Run one route by name, timed as ``route_<name>``.

        ``first_hop`` (the graph route only): route 1's fused sections, which seed the walk and
        are merged into its list (see the module docstring)."""
        cfg, data = self._config, self._data
        n = self.depth()
        of_row = data.sections.of_row
        with trace.stage(f"route_{route}"):
            if route == "bm25":
                out = by_section(bm25_search(self._reader, data, question, scope, domains,
                                             n * CHUNKS_PER_SECTION), of_row, n)
            elif route == "dense":
                out = by_section(dense_search(self._vectors, qvec, scope, domains, n * CHUNKS_PER_SECTION), of_row, n)
            elif route == "hybrid":
                out = hybrid_search(self._reader, data, self._vectors, question, qvec, scope, domains, n,
                                    cfg.rrf_k, self._reranker, cfg.reranker.top_n, cfg.hybrid_fusion)
                err = getattr(self._reranker, "last_error", None)
                if err:
                    trace.step("rerank", "LLM re-ranker failed: fused order kept", error=err)
            elif route == "toc":
                out = toc_search(data, self.labels, question, scope, domains, cfg, trace, self._llm)
            elif route == "graph":
                seeds = None if first_hop is None else [(h.row, h.score) for h in first_hop]
                out = by_section(self._graph.search(question, qvec, scope, domains, n * CHUNKS_PER_SECTION,
                                                    trace, seeds), of_row, n)
                if first_hop is not None:
                    out = with_first_hop(out, first_hop, n, cfg.graph_keep_head)
            else:  # pragma: no cover - QueryConfig validates route names
                raise ValueError(f"unknown route {route!r}")
        return out

    def _fuse(self, lists: Sequence[SectionList]) -> list[SectionHit]:
        cfg = self._config
        if len(lists) == 1:
            return list(lists[0].hits)
        return fuse(lists, self._data.sections.id_rank, cfg.route_fusion, cfg.rrf_k, cfg.route_weights)

    def _second_hop(self, lists: list[SectionList], question, qvec, scope, domains, trace) -> list[SectionList]:
        """Route 1's lists replaced by the graph walk seeded from their fusion."""
        first = [lst for lst in lists if lst.route in ROUTE1]
        rest = [lst for lst in lists if lst.route not in ROUTE1]
        head = self._fuse(first)
        walk = self.run_route("graph", question, qvec, scope, domains, trace, first_hop=head)
        return [walk, *rest]

    def retrieve(self, question: str, qvec: np.ndarray, scope: QueryScope, domains: Sequence[str],
                 trace: TraceRecorder, routes: Sequence[str] | None = None) -> list[SectionHit]:
        """All routes fused (parallel) or route 1 first, escalating while insufficient."""
        cfg = self._config
        routes = list(routes or cfg.routes)
        hop = "graph" in routes and any(r in ROUTE1 for r in routes)
        if cfg.composition == "parallel" or len(routes) == 1:
            lists = [self.run_route(r, question, qvec, scope, domains, trace)
                     for r in routes if not (hop and r == "graph")]
            if hop:
                lists = self._second_hop(lists, question, qvec, scope, domains, trace)
            trace.step("retrieve", f"parallel routes fused ({cfg.route_fusion})"
                       + (", graph walk seeded by route 1" if hop else ""),
                       sizes={lst.route: len(lst.hits) for lst in lists})
            return self._fuse(lists)
        first = [r for r in routes if r in ROUTE1] or routes[:1]
        rest = [r for r in routes if r not in first]
        lists = [self.run_route(r, question, qvec, scope, domains, trace) for r in first]
        fused = self._fuse(lists)
        for r in rest:
            with trace.stage("sufficiency"):
                j = judge(question, fused, self._data, self._llm, stage="sufficiency")
            trace.step("retrieve", f"after {'+'.join(x.route for x in lists)}: "
                       f"{'sufficient' if j.sufficient else 'insufficient'}",
                       coverage=j.coverage, by=j.by)
            if j.sufficient:
                break
            if r == "graph" and hop:
                lists = self._second_hop(lists, question, qvec, scope, domains, trace)
            else:
                lists.append(self.run_route(r, question, qvec, scope, domains, trace))
            fused = self._fuse(lists)
        trace.step("retrieve", f"sequential routes fused ({cfg.route_fusion})",
                   sizes={lst.route: len(lst.hits) for lst in lists})
        return fused
