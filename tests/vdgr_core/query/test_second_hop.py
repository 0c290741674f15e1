"""The graph route as a second hop: seeded by route 1, it keeps route 1's best evidence on top
and brings up the bridge passage of a two-hop question (a real build, hashing embedder)."""
import pytest

from pipelines.run_build import run_build
from schemas.config import BuildConfig, EmbeddingConfig, QueryConfig
from tests.support.corpus import write_corpus
from vdgr_core.query.knowledge_base import KnowledgeBase

FILLER = ("# {title}\n\nA film director and the spouse of a film director often attend the festival of "
          "{title}. Every director brings a spouse, and the festival lists each director and spouse "
          "by name in its programme.\n")
FILES = {
    "films/_meta.yaml": "description: Films and the people who made them\n",
    "films/works/night_harbor.md": (
        "# Night Harbor\n\nNight Harbor is a 1987 drama film. The director of Night Harbor is "
        "Orsolya Venkatesh, who also wrote its screenplay.\n"),
    "films/people/orsolya_venkatesh.md": (
        "# Orsolya Venkatesh\n\nOrsolya Venkatesh is a Hungarian filmmaker born in Pecs. "
        "Orsolya Venkatesh is married to the composer Teodor Blum.\n"),
    **{f"films/festivals/fest_{i}.md": FILLER.format(title=f"Festival {name}")
       for i, name in enumerate(["Lumen", "Corvin", "Aster", "Bora", "Danube", "Kestrel"])},
}
QUESTION = "Who is the spouse of the director of Night Harbor?"
EMB = EmbeddingConfig(kind="hashing")


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    root = tmp_path_factory.mktemp("hop")
    corpus = write_corpus(str(root / "corpus"), FILES)
    run_build(BuildConfig(corpus=corpus, index=str(root / "index"), embedding=EMB))
    return str(root / "index")


def _titles(index, routes, k=3):
    kb = KnowledgeBase.open(index, QueryConfig(embedding=EMB, routes=routes))
    r = kb.query(QUESTION, k=k)
    return [e.title for e in r.evidence], r


def test_route_one_alone_misses_the_bridge(index):
    titles, _ = _titles(index, ("hybrid",))
    assert titles[0] == "Night Harbor"
    assert "Orsolya Venkatesh" not in titles          # the question never names her


def test_graph_hop_keeps_the_first_hop_and_brings_up_the_bridge(index):
    first, _ = _titles(index, ("hybrid",))
    titles, r = _titles(index, ("hybrid", "graph"))
    assert titles[0] == first[0] == "Night Harbor"     # the first hop's best evidence stays first
    assert "Orsolya Venkatesh" in titles
    ev = {e.title: e for e in r.evidence}
    assert "graph" in ev["Orsolya Venkatesh"].routes
    assert set(ev["Night Harbor"].routes) >= {"hybrid", "graph"}
    step = next(s for s in r.trace.steps if s.stage == "graph")
    assert "route 1" in step.message


def test_graph_alone_still_seeds_from_dense_hits(index):
    _, r = _titles(index, ("graph",))
    step = next(s for s in r.trace.steps if s.stage == "graph")
    assert "dense" in step.message and r.evidence


def test_bridge_follow_up_runs_on_its_own_switch_and_keeps_the_first_hop(index):
    kb = KnowledgeBase.open(index, QueryConfig(embedding=EMB, routes=("hybrid",), reflection=False,
                                               reflection_bridge=True))
    r = kb.query(QUESTION, k=4)
    steps = [s for s in r.trace.steps if s.stage == "reflection"]
    assert steps and steps[-1].message.startswith("bridge: follow-up query")
    assert "venkatesh" in steps[-1].data["query"].lower()
    assert r.evidence[0].title == "Night Harbor"         # the first round's best stays first
    assert any("reflection" in e.routes for e in r.evidence)
    # off (the default): no follow-up search
    plain = KnowledgeBase.open(index, QueryConfig(embedding=EMB, routes=("hybrid",))).query(QUESTION, k=4)
    assert not [s for s in plain.trace.steps if s.stage == "reflection"]
