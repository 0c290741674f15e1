"""Route ``bm25``: tantivy BM25 over the routed domains' shards, grouped into sections."""
from __future__ import annotations

from vdgr_core.query.context import Search
from vdgr_core.query.fusion import SectionList, by_section
from vdgr_core.query.hybrid import CHUNKS_PER_SECTION, bm25_search
from vdgr_core.query.routes.base import RouteDeps, register


@register
class Bm25Route:
    """BM25 alone (half of route 1)."""

    name = "bm25"
    first_hop = True
    second_hop = False

    def __init__(self, deps: RouteDeps):
        self._view = deps.view

    def search(self, q: Search, depth: int) -> SectionList:
        return by_section(bm25_search(self._view, q, depth * CHUNKS_PER_SECTION), self._view.sections.of_row, depth)
