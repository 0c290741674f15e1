"""The retrieve stage: the configured routes for one search, fused.

Every route returns sections (:class:`vdgr_core.query.fusion.SectionList`); the routes' lists
are fused by one method (``FusionSettings.route_fusion``) with per-route weights
(``FusionSettings.route_weights``). Routes are found by name in the registry
(:mod:`vdgr_core.query.routes`).

The graph route is a second hop, not a rival list: when route 1 (BM25, dense or hybrid: the
routes whose ``first_hop`` is set) runs too, a route whose ``second_hop`` is set (the graph
walk) starts from route 1's fused sections (HippoRAG 2 seeds its PageRank with the dense hits)
and its ranking *replaces* route 1's list in the fusion, behind route 1's best section, which
stays first (``GraphSettings.keep_head``). No route is known here by its name.
The first-hop evidence keeps the restart mass, so it stays near the top, and passages that
share entities with it (the bridges of a multi-hop question) move up behind it. Fusing the walk
as one more list beside route 1 instead counted route 1's evidence twice and lost the walk's
deep recall (bench/quality/fusion_study.py).
"""
from __future__ import annotations

from typing import Mapping, Optional, Sequence

from schemas.config import FusionSettings, RetrieveSettings
from vdgr_core.query.context import Search
from vdgr_core.query.fusion import SectionHit, SectionList, fuse
from vdgr_core.query.reflection import judge
from vdgr_core.query.routes import Route
from vdgr_core.query.view import IndexView

DEPTH_PER_K = 3          # sections each route returns per evidence item wanted


class Retriever:
    """Runs the configured routes for one (possibly refined) search and fuses them.

    Parameters
    ----------
    view : IndexView
    routes : mapping of str to Route
        The route instances by name (:func:`vdgr_core.query.routes.build_routes`).
    settings : RetrieveSettings
        ``k``, the route names to run and their composition.
    fusion : FusionSettings
    llm : LLMClient, optional
        The sufficiency judge of the sequential composition.
    """

    def __init__(self, view: IndexView, routes: Mapping[str, Route], settings: RetrieveSettings,
                 fusion: FusionSettings, llm=None):
        self._view = view
        self._routes = dict(routes)
        self._settings = settings
        self._fusion = fusion
        self._llm = llm

    def depth(self) -> int:
        """Sections each route returns for fusion."""
        return max(self._settings.k * DEPTH_PER_K, self._fusion.rerank_top_n)

    def _first_hop(self, name: str) -> bool:
        return bool(self._routes[name].first_hop)

    def _second_hop(self, name: str) -> bool:
        return bool(self._routes[name].second_hop)

    def run_route(self, name: str, q: Search) -> SectionList:
        """Run one route by name, timed as ``route_<name>``."""
        with q.trace.stage(f"route_{name}"):
            return self._routes[name].search(q, self.depth())

    def _fuse(self, lists: Sequence[SectionList]) -> list[SectionHit]:
        f = self._fusion
        if len(lists) == 1:
            return list(lists[0].hits)
        return fuse(lists, self._view.sections.id_rank, f.route_fusion, f.rrf_k, f.weights())

    def _walk_on(self, lists: list[SectionList], q: Search, names: Sequence[str]) -> list[SectionList]:
        """Route 1's lists replaced by the second-hop routes ``names``, seeded from their fusion."""
        first = [lst for lst in lists if self._first_hop(lst.route)]
        rest = [lst for lst in lists if not self._first_hop(lst.route)]
        head = self._fuse(first)
        return [*(self.run_route(name, q.seeded(head)) for name in names), *rest]

    def retrieve(self, q: Search, routes: Optional[Sequence[str]] = None) -> list[SectionHit]:
        """All routes fused (parallel) or route 1 first, escalating while insufficient."""
        return self.retrieve_with_parts(q, routes)[0]

    def _parts(self, lists: Sequence[SectionList]) -> tuple[SectionList, ...]:
        """The single-retriever lists of route 1: a fused route's parts, or the route's list."""
        return tuple(p for lst in lists if self._first_hop(lst.route) for p in (lst.parts or (lst,)))

    def retrieve_with_parts(self, q: Search, routes: Optional[Sequence[str]] = None
                            ) -> tuple[list[SectionHit], tuple[SectionList, ...]]:
        """:meth:`retrieve`, and route 1's single-retriever section lists (BM25 and dense for
        the hybrid route; the evidence stage's recall tail reads them)."""
        f = self._fusion
        trace = q.trace
        routes = list(routes or self._settings.routes)
        # second-hop routes walk on from route 1 when it runs too; alone, they search like any route
        second = [r for r in routes if self._second_hop(r)] if any(self._first_hop(r) for r in routes) else []
        if self._settings.composition == "parallel" or len(routes) == 1:
            lists = [self.run_route(r, q) for r in routes if r not in second]
            parts = self._parts(lists)
            if second:
                lists = self._walk_on(lists, q, second)
            trace.step("retrieve", f"parallel routes fused ({f.route_fusion})"
                       + (f", {'+'.join(second)} walk seeded by route 1" if second else ""),
                       sizes={lst.route: len(lst.hits) for lst in lists})
            return self._fuse(lists), parts
        first = [r for r in routes if self._first_hop(r)] or routes[:1]
        rest = [r for r in routes if r not in first]
        lists = [self.run_route(r, q) for r in first]
        parts = self._parts(lists)
        fused = self._fuse(lists)
        for r in rest:
            with trace.stage("sufficiency"):
                j = judge(q.text, fused, self._view, self._llm, stage="sufficiency")
            trace.step("retrieve", f"after {'+'.join(x.route for x in lists)}: "
                       f"{'sufficient' if j.sufficient else 'insufficient'}",
                       coverage=j.coverage, by=j.by)
            if j.sufficient:
                break
            if r in second:
                lists = self._walk_on(lists, q, [r])
            else:
                lists.append(self.run_route(r, q))
            fused = self._fuse(lists)
        trace.step("retrieve", f"sequential routes fused ({f.route_fusion})",
                   sizes={lst.route: len(lst.hits) for lst in lists})
        return fused, parts
