"""Route ``dense``: cosine nearest chunks (layout scan or vector index), grouped into sections."""
from __future__ import annotations

from vdgr_core.query.context import Search
from vdgr_core.query.fusion import SectionList, by_section
from vdgr_core.query.hybrid import CHUNKS_PER_SECTION, dense_search
from vdgr_core.query.routes.base import RouteDeps, register


@register
class DenseRoute:
    """Dense search alone (half of route 1)."""

    name = "dense"
    first_hop = True
    second_hop = False

    def __init__(self, deps: RouteDeps):
        self._view, self._vectors = deps.view, deps.vectors

    def search(self, q: Search, depth: int) -> SectionList:
        return by_section(dense_search(self._vectors, q, depth * CHUNKS_PER_SECTION),
                          self._view.sections.of_row, depth)
