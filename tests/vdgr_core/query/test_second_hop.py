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
