"""Route ``graph`` (route 3): personalised PageRank over passages and entities.

With route 1 in the same query it is the second hop: ``Search.first_hop`` (route 1's fused
sections) seeds the walk, and the walk's ranking is merged behind route 1's best section
(:func:`vdgr_core.query.fusion.with_first_hop`); alone, the dense hits seed it.
"""
from __future__ import annotations

from vdgr_core.query.context import Search
from vdgr_core.query.fusion import SectionList, by_section, with_first_hop
from vdgr_core.query.hybrid import CHUNKS_PER_SECTION
from vdgr_core.query.routes.base import RouteDeps, register


@register
class GraphWalkRoute:
    """The graph walk (:class:`vdgr_core.query.graph_route.GraphRoute`) as a route."""

    name = "graph"
    first_hop = False
    second_hop = True

    def __init__(self, deps: RouteDeps):
        self._deps = deps

    def search(self, q: Search, depth: int) -> SectionList:
        d = self._deps
        out = by_section(d.graph.search(q, depth * CHUNKS_PER_SECTION), d.view.sections.of_row, depth)
        if q.first_hop is not None:
            g = d.graph_settings
            out = with_first_hop(out, q.first_hop, depth, g.keep_head, g.n if g.keep_seeds else 0)
        return out
