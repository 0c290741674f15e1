"""Route ``toc`` (route 2): BM25 over heading paths and summaries (:mod:`vdgr_core.query.toc`)."""
from __future__ import annotations

from vdgr_core.query.context import Search
from vdgr_core.query.fusion import SectionList
from vdgr_core.query.routes.base import RouteDeps, register
from vdgr_core.query.toc import toc_search


@register
class TocRoute:
    """Table-of-contents search; ``depth`` is bounded by ``TocSettings.max_contents``."""

    name = "toc"
    first_hop = False
    second_hop = False

    def __init__(self, deps: RouteDeps):
        self._deps = deps

    def search(self, q: Search, depth: int) -> SectionList:
        d = self._deps
        return toc_search(d.view, d.labels, q, d.toc, d.llm)
