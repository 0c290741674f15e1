"""Routing and each retrieval route on the tiny index."""
import pytest

from schemas.errors import ConfigError
from tests.support.tiny_index import DIM
from tests.vdgr_core.query.conftest import config
from vdgr_core.embedding import HashingEmbedder
from vdgr_core.query.scope import QueryScope
from vdgr_core.query.knowledge_base import KnowledgeBase
from vdgr_core.query.trace import TraceRecorder
from vdgr_core.store.filters import SearchScope


def _route(kb, question, **scope):
    qvec = kb.embedder.embed([question])[0]
    return kb.router.route(question, qvec, QueryScope(SearchScope(**scope)), TraceRecorder())


@pytest.mark.parametrize("question,domain", [
    ("How do I charge the Galaxy S10 battery?", "Galaxy_S10"),
    ("Where is the fingerprint sensor on the Galaxy S10e?", "Galaxy_S10e"),
    ("How many days of annual leave do employees get?", "HR_Policies"),
])
def test_routing_puts_named_product_first(kb, question, domain):
    d = _route(kb, question)
    assert d.names[0] == domain
    assert all(0.0 <= s.confidence <= 1.0 for s in d.domains)
    assert len(d.domains) <= kb.config.max_domains


def test_routing_keeps_several_domains_when_nothing_distinguishes(kb):
    d = _route(kb, "zzqx")
    assert len(d.domains) >= 2


def test_explicit_domain_and_version_are_hard_filters(kb):
    r = kb.query("battery", domain="Galaxy_S10", version="1.0")
    assert [x.domain for x in r.routing] == ["Galaxy_S10"] and r.routing[0].confidence == 1.0
    assert r.evidence
    assert {(e.domain, e.version) for e in r.evidence} == {("Galaxy_S10", "1.0")}
    r2 = kb.query("battery Android", version="2.0")
    assert r2.evidence and {e.version for e in r2.evidence} == {"2.0"}


@pytest.mark.parametrize("route", ["bm25", "dense", "hybrid", "toc", "graph"])
def test_each_route_alone_finds_the_section(open_kb, route):
    kb = open_kb(routes=(route,), backtrack=False, reflection=False)
    r = kb.query("Wireless PowerShare charge another device Galaxy Buds", domain="Galaxy_S10")
    assert r.evidence, route
    assert r.evidence[0].title == "Wireless PowerShare"
    assert all(e.routes == [route] for e in r.evidence)
    assert f"route_{route}" in r.trace.timings_ms


def test_parallel_composition_lists_every_route(open_kb):
    kb = open_kb(routes=("hybrid", "toc", "graph"))
    r = kb.query("How does Wireless PowerShare charge another device?", k=5)
    assert len(r.evidence) <= 5
    top = r.evidence[0]
    assert top.title == "Wireless PowerShare"
    assert set(top.routes) == {"hybrid", "toc", "graph"}
    ids = [e.chunk_id for e in r.evidence]
    assert len(ids) == len(set(ids))
    scores = [e.score for e in r.evidence]
    assert scores == sorted(scores, reverse=True)


def test_sequential_composition_stops_when_route1_suffices(open_kb):
    kb = open_kb(routes=("hybrid", "toc", "graph"), composition="sequential", backtrack=False, reflection=False)
    r = kb.query("Wireless PowerShare battery level", domain="Galaxy_S10")
    assert "route_hybrid" in r.trace.timings_ms
    assert "route_toc" not in r.trace.timings_ms and "route_graph" not in r.trace.timings_ms
    r2 = kb.query("Wireless PowerShare zzqx", domain="Galaxy_S10")
    assert {"route_toc", "route_graph"} <= set(r2.trace.timings_ms)


def test_toc_collects_contents_under_chosen_directories(open_kb):
    kb = open_kb(routes=("toc",), toc_fine=1, backtrack=False, reflection=False)
    r = kb.query("Connections sections Wi-Fi Bluetooth NFC payments", domain="Galaxy_S10", version="1.0")
    step = next(s for s in r.trace.steps if s.stage == "toc")
    assert step.data["directories"] == ["Manual > Connections"]
    # the chosen directory is the Connections document: all its sections come back
    assert {e.title for e in r.evidence} == {"Wi-Fi", "Bluetooth", "NFC payments"}


def test_graph_route_uses_entities(open_kb):
    kb = open_kb(routes=("graph",), backtrack=False, reflection=False)
    r = kb.query("NFC", domain="Galaxy_S10", version="2.0")
    assert r.evidence[0].title == "NFC payments"
    step = next(s for s in r.trace.steps if s.stage == "graph")
    assert "NFC" in step.data["matched"]


def test_embedder_mismatch_is_a_clear_error(tiny_index):
    with pytest.raises(ConfigError, match="does not match the index"):
        KnowledgeBase.open(tiny_index, config(), embedder=HashingEmbedder(DIM * 2))
