"""The graph route over several domains is one walk: a domain's passages share its part of the
restart mass, so a domain reached only through a question word does not rank like the domain
that holds the first-hop evidence (a real build, hashing embedder)."""
import numpy as np
import pytest

from pipelines.run_build import run_build
from schemas.config import BuildConfig, EmbeddingConfig, QueryConfig
from tests.support.corpus import write_corpus
from vdgr_core.query.knowledge_base import KnowledgeBase
from vdgr_core.query.scope import QueryScope
from vdgr_core.query.trace import TraceRecorder
from vdgr_core.store.filters import SearchScope

FILES = {
    "films/_meta.yaml": "description: Films and the people who made them\n",
    "films/works/night_harbor.md": (
        "# Night Harbor\n\nNight Harbor is a 1987 drama film. The director of Night Harbor is "
        "Orsolya Venkatesh, who also wrote its screenplay.\n"),
    "films/people/orsolya_venkatesh.md": (
        "# Orsolya Venkatesh\n\nOrsolya Venkatesh is a Hungarian filmmaker born in Pecs. "
        "Orsolya Venkatesh is married to the composer Teodor Blum.\n"),
    "ports/_meta.yaml": "description: Port operations\n",
    "ports/docks/pilots.md": (
        "# Harbor Pilots\n\nThe Director of Harbor Operations assigns Harbor Pilots to every "
        "vessel. Harbor Pilots board at the outer buoy.\n"),
    "ports/docks/cranes.md": (
        "# Harbor Cranes\n\nHarbor Cranes are inspected by the Director of Harbor Operations "
        "each spring.\n"),
}
QUESTION = "Who is the spouse of the director of Night Harbor?"
EMB = EmbeddingConfig(kind="hashing")
BETA = 0.05


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    root = tmp_path_factory.mktemp("graph_domains")
    corpus = write_corpus(str(root / "corpus"), FILES)
    run_build(BuildConfig(corpus=corpus, index=str(root / "index"), embedding=EMB))
    return KnowledgeBase.open(str(root / "index"), QueryConfig(embedding=EMB, graph_beta=BETA))


def _row(kb, title):
    c = kb.data.contents
    return next(r for r in range(len(c)) if c.title[r] == title)


def _walk(kb, seeds):
    domains = ("films", "ports")
    scope = QueryScope(SearchScope(groups=(), domains=domains))
    emask = kb.graph.visible_entities(scope, domains)
    matched = kb.graph.matched_entities(QUESTION, emask, domains)
    ranked = kb.graph.search(QUESTION, np.zeros(EMB.dim, dtype=np.float32), scope, domains, 50,
                             TraceRecorder(), seeds=seeds)
    by_domain: dict[str, float] = {}
    for r, s in ranked.hits:
        by_domain[kb.data.contents.domain[r]] = by_domain.get(kb.data.contents.domain[r], 0.0) + s
    return ranked, by_domain, {kb.data.locate("entity", r)[0] for r in matched}


def test_a_domain_reached_only_by_question_words_holds_at_most_the_entity_share(kb):
    ranked, mass, matched_in = _walk(kb, [(_row(kb, "Night Harbor"), 1.0)])
    assert "ports" in matched_in                  # a question word names entities there too
    assert mass.get("ports", 0.0) > 0             # so the walk reaches its passages
    assert mass["ports"] <= BETA + 1e-9           # but with the entities' share of the mass only
    assert mass["films"] > 1 - BETA - 1e-9 - (1 - sum(mass.values())) - 1e-9
    assert sum(mass.values()) <= 1 + 1e-9         # one distribution over both domains
    films = [s for r, s in ranked.hits if kb.data.contents.domain[r] == "films"]
    ports = [s for r, s in ranked.hits if kb.data.contents.domain[r] == "ports"]
    assert min(films) > max(ports)
    assert kb.data.contents.title[ranked.hits[0][0]] == "Night Harbor"


def test_without_passage_seeds_the_entities_hold_all_the_mass(kb):
    domains = ("films", "ports")
    scope = QueryScope(SearchScope(groups=(), domains=domains))
    matched = kb.graph.matched_entities(QUESTION, kb.graph.visible_entities(scope, domains), domains)
    parts = dict(kb.graph._restarts({}, matched, domains))
    assert sum(float(p.sum()) for p in parts.values()) == pytest.approx(1.0)
    assert all(float(p[:kb.data.layout(d).nc].sum()) == 0.0 for d, p in parts.items())
    _, mass, _ = _walk(kb, [])
    assert mass and 0 < sum(mass.values()) <= 1 + 1e-9


def test_restart_vectors_form_one_distribution(kb):
    domains = ("films", "ports")
    scope = QueryScope(SearchScope(groups=(), domains=domains))
    emask = kb.graph.visible_entities(scope, domains)
    matched = kb.graph.matched_entities(QUESTION, emask, domains)
    parts = dict(kb.graph._restarts({_row(kb, "Night Harbor"): 1.0}, matched, domains))
    assert set(parts) == {"films", "ports"}
    assert sum(float(p.sum()) for p in parts.values()) == pytest.approx(1.0)
    nc = {d: kb.data.layout(d).nc for d in parts}
    assert sum(float(p[:nc[d]].sum()) for d, p in parts.items()) == pytest.approx(1 - BETA)
    assert float(parts["ports"][:nc["ports"]].sum()) == 0.0


def test_a_domain_whose_share_cannot_reach_the_top_k_is_not_walked(kb):
    domains = ("films", "ports")
    scope = QueryScope(SearchScope(groups=(), domains=domains))
    seeds = [(_row(kb, "Night Harbor"), 1.0)]
    full, _, _ = _walk(kb, seeds)
    trace = TraceRecorder()
    top = kb.graph.search(QUESTION, np.zeros(EMB.dim, dtype=np.float32), scope, domains, 1, trace, seeds=seeds)
    step = next(s for s in trace.steps if s.stage == "graph")
    assert step.data["skipped_domains"] == 1 and step.data["walks"] == 1
    assert top.hits == full.hits[:1]              # the bound is exact: the same top k
