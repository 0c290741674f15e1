"""Title entities: the graph walk reaches a passage about a name through another passage naming it."""
from __future__ import annotations

import pytest

from runners.cli import main
from tests.support.corpus import write_corpus
from tests.support.tiny_index import DIM
from tests.vdgr_core.query.conftest import config
from vdgr_core.query.knowledge_base import KnowledgeBase

# The song's passage names the singer; the singer's passage never names himself (a pronoun),
# so only his title ties him to the song. Distractors keep the dense seeds away from him.
FILES = {
    "music/songs/itll-be-me.md": "# It'll Be Me\n\nIt'll Be Me is a rockabilly song. Waylon Payne sang "
                                 "It'll Be Me in the film Walk the Line.\n",
    "music/people/waylon-payne.md": "# Waylon Payne\n\nHe is an American country singer, songwriter and actor, "
                                    "the son of Sammi Smith.\n",
    **{f"music/other/d{i}.md": f"# Topic {i}\n\nParagraph {i} about orchard trees, river boats and "
                               f"mountain trails number {i}.\n" for i in range(8)},
}
QUESTION = "Who sang It'll Be Me in Walk the Line?"


@pytest.fixture(scope="module")
def indexes(tmp_path_factory):
    root = tmp_path_factory.mktemp("title_bridge")
    corpus = write_corpus(str(root / "corpus"), FILES)
    out = {}
    for name, flag in (("titles", "--title-entities"), ("plain", "--no-title-entities")):
        out[name] = str(root / name)
        assert main(["index", corpus, "--index", out[name], "--embedding", "hashing", "--embedding-dim", str(DIM),
                     flag, "-q"]) == 0
    return out


def _graph_titles(index: str) -> tuple[list[str], list[str]]:
    kb = KnowledgeBase.open(index, config(routes=("graph",), graph_n=1, backtrack=False, reflection=False,
                                          routing=False))
    r = kb.query(QUESTION)
    step = next(s for s in r.trace.steps if s.stage == "graph")
    return [e.title for e in r.evidence], step.data["matched"]


def test_the_walk_reaches_the_singer_through_his_title(indexes):
    titles, matched = _graph_titles(indexes["titles"])
    assert titles[0] == "It'll Be Me"                 # the dense seed, found by the question's words
    assert "Waylon Payne" in titles                   # one hop: song passage -> "Waylon Payne" -> his passage
    assert "It'll Be Me" in matched                   # the question names a title: an entity seed


def test_without_title_entities_the_singer_is_out_of_reach(indexes):
    titles, matched = _graph_titles(indexes["plain"])
    assert titles[0] == "It'll Be Me"
    assert "Waylon Payne" not in titles
    assert "It'll Be Me" not in matched
