"""Routes are classes in a registry; a new route is one class."""
import pytest

from tests.vdgr_core.query.conftest import config
from vdgr_core.query.context import Search
from vdgr_core.query.fusion import SectionHit, SectionList
from vdgr_core.query.knowledge_base import KnowledgeBase
from vdgr_core.query.pipeline import Retriever
from vdgr_core.query.routes import REGISTRY, Route, build_routes, register
from vdgr_core.query.scope import QueryScope
from vdgr_core.query.trace import TraceRecorder
from vdgr_core.store.filters import SearchScope


def test_every_configurable_route_is_registered_and_a_route():
    from typing import get_args

    from schemas.config import QueryConfig

    names = get_args(QueryConfig.model_fields["routes"].annotation.__args__[0])
    assert set(names) == set(REGISTRY)
    for cls in REGISTRY.values():
        assert cls.name in names and isinstance(cls.first_hop, bool)


def test_unknown_route_is_refused(kb):
    with pytest.raises(ValueError, match="unknown route"):
        build_routes(None, ["nope"])


def test_a_new_route_is_one_registered_class(tiny_index):
    kb = KnowledgeBase.open(tiny_index, config(routes=("hybrid",)))

    @register
    class FirstSectionRoute:
        """Returns the first section in scope (a toy route)."""
        name = "first_section"
        first_hop = False

        def __init__(self, deps):
            self._view = deps.view

        def search(self, q: Search, depth: int) -> SectionList:
            mask = self._view.contents.mask(q.scope)
            row = next(r for r in range(len(self._view.contents)) if mask[r])
            return SectionList(self.name, [SectionHit(int(self._view.sections.of_row[row]), 1.0, (row,),
                                                      (self.name,))])

    try:
        routes = build_routes(kb.retriever._routes["hybrid"]._deps, REGISTRY)
        assert isinstance(routes["first_section"], Route)
        retriever = Retriever(kb.data, routes, kb.config.slices.retrieve, kb.config.slices.fusion)
        scope = QueryScope(SearchScope(domains=("HR_Policies",)))
        trace = TraceRecorder()
        q = Search("annual leave", kb.embedder.embed(["annual leave"])[0], scope, ("HR_Policies",), trace)
        hits = retriever.retrieve(q, routes=["first_section", "hybrid"])
        assert any("first_section" in h.routes for h in hits)
        assert "route_first_section" in trace.timings
    finally:
        REGISTRY.pop("first_section", None)
