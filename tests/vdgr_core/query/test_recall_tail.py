"""The second half of the first k shows each single retriever's best section not shown yet."""
from __future__ import annotations

import numpy as np
import pytest

from tests.support.tiny_index import Doc, build_tiny_index
from tests.vdgr_core.query.conftest import config
from vdgr_core.query.context import QueryContext
from vdgr_core.query.fusion import SectionHit, SectionList, recall_tail
from vdgr_core.query.knowledge_base import KnowledgeBase
from vdgr_core.query.scope import QueryScope
from vdgr_core.query.trace import TraceRecorder
from vdgr_core.store.filters import SearchScope


def _hits(sections, route="hybrid"):
    return [SectionHit(s, 1.0 / (i + 1), (s,), (route,)) for i, s in enumerate(sections)]


def _list(route, sections):
    return SectionList(route, _hits(sections, route))


def _sections(hits):
    return [h.section for h in hits]


DOC = np.arange(20)          # every section its own document unless a test says otherwise


def test_the_head_stays_and_the_tail_takes_turns_nothing_lost():
    fused = _hits([0, 1, 2, 3, 4, 5, 6, 7])
    bm25, dense = _list("bm25", [0, 11, 2, 12]), _list("dense", [1, 13, 14])
    out = recall_tail(fused, [bm25, dense], 8, DOC, lambda h: h.section)
    # head: the first 4 fused; then fused 2nd half, BM25's and dense's best unseen, in turn
    assert _sections(out[:8]) == [0, 1, 2, 3, 4, 11, 13, 5]
    # everything fused keeps a place behind; the single-retriever sections come with their route
    assert _sections(out[8:]) == [6, 7]
    assert out[5].routes == ("bm25",) and out[6].routes == ("dense",)


def test_a_section_the_fused_list_holds_keeps_its_fused_rows_and_routes():
    fused = [SectionHit(0, 1.0, (0,), ("hybrid",)), SectionHit(5, 0.5, (50, 51), ("hybrid", "graph"))]
    bm25 = SectionList("bm25", [SectionHit(5, 9.0, (51,), ("bm25",))])
    out = recall_tail(fused + _hits([6, 7]), [bm25, _list("dense", [])], 2, DOC, lambda h: h.section)
    assert out[1] is fused[1]


def test_copies_and_full_documents_are_skipped():
    fused = _hits([0, 1, 2, 3])
    bm25 = _list("bm25", [10, 11, 12])
    doc = np.array([0, 0, 1, 2] + [9] * 7 + [0, 5])      # section 11 is in document 0
    out = recall_tail(fused, [bm25, _list("dense", [])], 4, doc,
                      lambda h: 0 if h.section == 10 else h.section)    # 10 is a copy of 0
    # k=4: head [0, 1] (document 0 full: 2 of 4); fused 2; BM25: 10 a copy, 11 in document 0: 12
    assert _sections(out[:4]) == [0, 1, 2, 12]


@pytest.mark.parametrize("k", [1, 2, 5])
def test_one_retriever_or_no_tail_places_leaves_the_order(k):
    fused = _hits([3, 1, 2, 0, 4, 5])
    assert recall_tail(fused, [_list("bm25", [5, 4])], k, DOC, lambda h: h.section) == fused
    assert recall_tail(fused, [], k, DOC, lambda h: h.section) == fused
    assert recall_tail(fused, [_list("bm25", [5]), _list("dense", [4])], 1, DOC, lambda h: h.section) == fused


# ---------------------------------------------------------------------------- real index

# ten pages that match the question's common words over and over, one page with its rare word:
# BM25 ranks that page first, dense (and so the fusion) ranks it below the ten
POOLS = tuple(Doc("Srv", "Manual", "1", f"Page {i}", ((f"Timeout {i}", (
    f"Server connection settings: the server connection settings of pool {i}.",)),)) for i in range(10))
SPOOL = Doc("Srv", "Manual", "1", "Spool", (("Spool", (
    "The archive keeps old mail in gzip files; frobnicate rotates them weekly.",)),))
QUESTION = "server connection settings frobnicate"


@pytest.fixture(scope="module")
def pools_index(tmp_path_factory) -> str:
    return build_tiny_index(str(tmp_path_factory.mktemp("tail")), (*POOLS, SPOOL), {"Srv": "Server manual"})


def test_the_section_only_bm25_ranks_first_is_shown(pools_index):
    """Real LanceDB and tantivy: the fused first 6 are ten look-alike pages; the tail shows the
    one page BM25 ranks first, behind the fused head, which stays."""
    on = KnowledgeBase.open(pools_index, config(k=6))
    off = KnowledgeBase.open(pools_index, config(k=6, recall_tail=False))
    _, parts = _retrieve(on, QUESTION)
    assert [p.route for p in parts] == ["bm25", "dense"]
    assert on._evidence(parts[0].hits[0]).title == "Spool"
    got, base = on.query(QUESTION).evidence, off.query(QUESTION).evidence
    assert "Spool" not in [e.title for e in base]                 # the baseline the tail fixes
    assert [e.section_id for e in got[:3]] == [e.section_id for e in base[:3]]
    assert len(got) == len(base) == 6
    # place 4 is the fused list's turn, place 5 BM25's
    assert [e.title for e in got].index("Spool") == 4
    # every single retriever's best section is shown
    shown = {e.section_id for e in got}
    assert {on._evidence(p.hits[0]).section_id for p in parts} <= shown


def _retrieve(kb, question):
    """Route 1's fused hits and single-retriever lists for ``question``, as the stages run it."""
    ctx = QueryContext(question=question, qid="t", scope=QueryScope(SearchScope()), k=kb.config.k,
                       trace=TraceRecorder())
    kb.stages.route(ctx)
    return kb.retriever.retrieve_with_parts(ctx.search)


def test_two_picks_of_one_round_do_not_pass_the_document_cap_or_repeat_a_copy():
    fused = _hits([0, 1, 2, 3, 4, 5])
    # k=6: head [0, 1, 2]; section 0 and 1 are in document 7, so document 7 holds 2 of its 3
    doc = np.array([7, 7, 1, 2, 3, 4, 6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 9, 9])
    bm25, dense = _list("bm25", [14, 16]), _list("dense", [15, 17])
    out = recall_tail(fused, [bm25, dense], 6, doc, lambda h: h.section)
    # round 1: fused 3, BM25 14 (document 7 full now), dense 15 is of document 7: not placed
    assert _sections(out[:6]) == [0, 1, 2, 3, 14, 4]
    # copies: BM25's 16 and dense's 17 are one section's copies: only the first is placed
    out = recall_tail(fused, [_list("bm25", [16]), _list("dense", [17])], 6, doc,
                      lambda h: "copy" if h.section in (16, 17) else h.section)
    assert _sections(out[:6]) == [0, 1, 2, 3, 16, 4]
