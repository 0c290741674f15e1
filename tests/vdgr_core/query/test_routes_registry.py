"""Routes are classes in a registry; a new route is one class."""
import pytest

from schemas.config import QueryConfig
from schemas.errors import ConfigError
from tests.vdgr_core.query.conftest import config
from vdgr_core.query.context import Search
from vdgr_core.query.fusion import SectionHit, SectionList
from vdgr_core.query.knowledge_base import KnowledgeBase
from vdgr_core.query.routes import REGISTRY, Route, build_routes, register


def test_the_built_in_routes_are_registered():
    from runners.query_cli import ROUTES

    assert set(ROUTES) <= set(REGISTRY)
    for name in ROUTES:
        assert REGISTRY[name].name == name and isinstance(REGISTRY[name].first_hop, bool)
        assert isinstance(REGISTRY[name].second_hop, bool)
    assert {n for n in REGISTRY if REGISTRY[n].first_hop} >= {"bm25", "dense", "hybrid"}
    assert {n for n in ROUTES if REGISTRY[n].second_hop} == {"graph"}


def test_unknown_route_is_refused(tiny_index):
    with pytest.raises(ValueError, match="unknown route"):
        build_routes(None, ["nope"])
    with pytest.raises(ConfigError, match="unknown route"):
        KnowledgeBase.open(tiny_index, config(routes=("hybrid", "nope")))
    with pytest.raises(ValueError):
        QueryConfig(routes=())
    with pytest.raises(ValueError):
        QueryConfig(routes=("Not A Name",))


def test_a_new_route_is_one_registered_class(tiny_index):
    @register
    class FirstSectionRoute:
        """A toy route: the first section in scope."""
        name = "first_section"
        first_hop = False
        second_hop = False

        def __init__(self, deps):
            self._view = deps.view

        def search(self, q: Search, depth: int) -> SectionList:
            mask = self._view.contents.mask(q.scope.with_domains(q.domains))
            row = next(r for r in range(len(self._view.contents)) if mask[r])
            return SectionList(self.name, [SectionHit(int(self._view.sections.of_row[row]), 1.0, (row,),
                                                      (self.name,))])

    try:
        kb = KnowledgeBase.open(tiny_index, config(routes=("hybrid", "first_section")))
        assert isinstance(kb.retriever._routes["first_section"], Route)
        result = kb.query("How many days of annual leave?")
        assert any("first_section" in e.routes for e in result.evidence)
        assert "route_first_section" in result.trace.timings_ms
        assert all(e.domain == "HR_Policies" for e in result.evidence if "first_section" in e.routes)
    finally:
        REGISTRY.pop("first_section", None)


def test_a_second_hop_is_a_route_attribute_not_a_name(tiny_index):
    """Any route whose ``second_hop`` is set walks on from route 1's fused sections, in place
    of route 1's lists; alone, it is searched without them."""
    seen = []

    @register
    class EchoSeedsRoute:
        """A toy second hop: route 1's sections as they were handed over."""
        name = "echo_seeds"
        first_hop = False
        second_hop = True

        def __init__(self, deps):
            pass

        def search(self, q: Search, depth: int) -> SectionList:
            seen.append(q.first_hop)
            return SectionList(self.name, [SectionHit(h.section, h.score, h.rows, (self.name,))
                                           for h in (q.first_hop or ())][:depth])

    try:
        kb = KnowledgeBase.open(tiny_index, config(routes=("hybrid", "echo_seeds")))
        result = kb.query("How many days of annual leave?")
        assert len(seen) == 1 and seen[0]                        # seeded by route 1's sections
        assert all(e.routes == ["echo_seeds"] for e in result.evidence)   # route 1's list replaced
        steps = [s.message for s in result.trace.steps if s.stage == "retrieve"]
        assert steps == ["parallel routes fused (rrf), echo_seeds walk seeded by route 1"]
        alone = KnowledgeBase.open(tiny_index, config(routes=("echo_seeds",)))
        assert alone.query("How many days of annual leave?").evidence == [] and seen[-1] is None
    finally:
        REGISTRY.pop("echo_seeds", None)
