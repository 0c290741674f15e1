"""Route ``hybrid`` (route 1): BM25 + dense sections fused, the head re-ranked."""
from __future__ import annotations

from vdgr_core.query.context import Search
from vdgr_core.query.fusion import SectionList
from vdgr_core.query.hybrid import hybrid_search
from vdgr_core.query.routes.base import RouteDeps, register


@register
class HybridRoute:
    """Route 1 (:func:`vdgr_core.query.hybrid.hybrid_search`); a failed LLM re-ranker keeps
    the fused order and says so in the trace."""

    name = "hybrid"
    first_hop = True
    second_hop = False

    def __init__(self, deps: RouteDeps):
        self._deps = deps

    def search(self, q: Search, depth: int) -> SectionList:
        d = self._deps
        out = hybrid_search(d.view, d.vectors, q, depth, d.fusion, d.reranker)
        err = getattr(d.reranker, "last_error", None)
        if err:
            q.trace.step("rerank", "LLM re-ranker failed: fused order kept", error=err)
        return out
