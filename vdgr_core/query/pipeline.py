"""Composition of the retrieval routes: parallel (all routes) or sequential (escalate).

Either way route 1's list anchors the fusion: TOC and graph only add rows it did not return
(:func:`vdgr_core.query.fusion.anchored_rrf`)."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from schemas.config import QueryConfig
from vdgr_core.query.data import IndexData, QueryScope
from vdgr_core.query.fusion import Fused, Ranked, anchored_rrf
from vdgr_core.query.graph_route import GraphRoute
from vdgr_core.query.hybrid import bm25_search, dense_search, hybrid_search
from vdgr_core.query.reflection import judge
from vdgr_core.query.rerank import Reranker
from vdgr_core.query.toc import toc_search
from vdgr_core.query.trace import TraceRecorder

ROUTE1 = ("bm25", "dense", "hybrid")


class Retriever:
    """Runs the configured routes for one (possibly refined) query and fuses them."""

    def __init__(self, reader, data: IndexData, config: QueryConfig, reranker: Reranker,
                 graph: GraphRoute, llm=None):
        self._reader = reader
        self._data = data
        self._config = config
        self._reranker = reranker
        self._graph = graph
        self._llm = llm

    def run_route(self, route: str, question: str, qvec: np.ndarray, scope: QueryScope,
                  domains: Sequence[str], trace: TraceRecorder) -> Ranked:
        """Run one route by name, timed as ``route_<name>``."""
        cfg, data = self._config, self._data
        with trace.stage(f"route_{route}"):
            if route == "bm25":
                out = bm25_search(self._reader, data, question, scope, domains, cfg.k)
            elif route == "dense":
                out = dense_search(data, qvec, scope, domains, cfg.k)
            elif route == "hybrid":
                out = hybrid_search(self._reader, data, question, qvec, scope, domains, cfg.k,
                                    cfg.rrf_k, self._reranker, cfg.reranker.top_n, cfg.hybrid_fusion)
                err = getattr(self._reranker, "last_error", None)
                if err:
                    trace.step("rerank", "LLM re-ranker failed: fused order kept", error=err)
            elif route == "toc":
                out = toc_search(data, question, qvec, scope, domains, cfg, trace, self._llm)
            elif route == "graph":
                out = self._graph.search(question, qvec, scope, domains, cfg.k, trace)
            else:  # pragma: no cover - QueryConfig validates route names
                raise ValueError(f"unknown route {route!r}")
        return out

    def _fuse(self, lists: Sequence[Ranked]) -> list[Fused]:
        """Weighted RRF anchored on the route-1 lists: TOC and graph add rows, never reorder."""
        cfg = self._config
        primary = [lst for lst in lists if lst.route in ROUTE1]
        secondary = [lst for lst in lists if lst.route not in ROUTE1]
        return anchored_rrf(primary, secondary, cfg.rrf_k, self._data.contents.id_rank,
                            weights=cfg.route_weights)

    def retrieve(self, question: str, qvec: np.ndarray, scope: QueryScope, domains: Sequence[str],
                 trace: TraceRecorder, routes: Sequence[str] | None = None) -> list[Fused]:
        """All routes fused by RRF (parallel) or route 1 first, escalating while insufficient."""
        cfg = self._config
        routes = list(routes or cfg.routes)
        if cfg.composition == "parallel" or len(routes) == 1:
            lists = [self.run_route(r, question, qvec, scope, domains, trace) for r in routes]
            trace.step("retrieve", "parallel routes fused by RRF anchored on route 1",
                       sizes={lst.route: len(lst.hits) for lst in lists})
            return self._fuse(lists)
        first = [r for r in routes if r in ROUTE1] or routes[:1]
        rest = [r for r in routes if r not in first]
        lists = [self.run_route(r, question, qvec, scope, domains, trace) for r in first]
        fused = self._fuse(lists)
        for r in rest:
            with trace.stage("sufficiency"):
                j = judge(question, fused, self._data.contents, self._llm, stage="sufficiency")
            trace.step("retrieve", f"after {'+'.join(x.route for x in lists)}: "
                       f"{'sufficient' if j.sufficient else 'insufficient'}",
                       coverage=j.coverage, by=j.by)
            if j.sufficient:
                break
            lists.append(self.run_route(r, question, qvec, scope, domains, trace))
            fused = self._fuse(lists)
        trace.step("retrieve", "sequential routes fused by RRF anchored on route 1",
                   sizes={lst.route: len(lst.hits) for lst in lists})
        return fused
