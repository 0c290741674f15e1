"""Domain-name stripping, weighted fusion, section evidence (parent-document pattern), caches."""
import numpy as np
import pytest

from tests.support.tiny_index import SECRET_TITLE, SECRET_WORD
from vdgr_core.query.fusion import SectionHit, SectionList, fuse
from vdgr_core.query.routing import STRIP_MIN, NameMatcher, strip_span

PHONES = ["Galaxy_S10", "Galaxy_S10e", "Galaxy_S10+", "Galaxy_Note_10", "Galaxy_A50"]
COMPLEXES = ["zhk_city_skyline", "zhk_central_park", "zhk_sunny_shore", "zhk_green_park"]


def test_name_match_weights_distinctive_tokens():
    m = NameMatcher(PHONES)
    q = "On my Galaxy S10, how do I turn on Wireless PowerShare?"
    s10, span = m.match(q, "Galaxy_S10")
    assert s10 == pytest.approx(1.0) and q[span[0]:span[1]] == "Galaxy S10"
    assert m.match(q, "Galaxy_S10e")[0] < 0.1           # only the shared word "galaxy"
    assert m.match(q, "Galaxy_S10+")[0] < 0.1            # s10+ is another token than s10
    c = NameMatcher(COMPLEXES)
    q2 = "RC City Skyline, section apartments: what is the price of a studio?"
    score, span = c.match(q2, "zhk_city_skyline")
    assert score >= STRIP_MIN and q2[span[0]:span[1]] == "City Skyline"
    assert c.match(q2, "zhk_central_park")[0] < 0.2      # "park"/"zhk" alone: not named


def test_strip_span_keeps_the_rest():
    q = "On my Galaxy S10, how do I pair headphones?"
    assert strip_span(q, (6, 16)) == "On my , how do I pair headphones?"
    assert strip_span(q, None) == q


def test_named_domain_is_stripped_from_retrieval_text(kb):
    r = kb.query("On my Galaxy S10e, where is the fingerprint sensor?")
    assert r.routing[0].domain == "Galaxy_S10e"
    step = [s for s in r.trace.steps if s.message.startswith("retrieval text")]
    assert step and step[0].data["query"] == "On my , where is the fingerprint sensor?"
    assert r.evidence and r.evidence[0].domain == "Galaxy_S10e"


def test_explicit_domain_named_in_question_is_stripped(kb):
    r = kb.query("Galaxy S10 Bluetooth headphones", domain="Galaxy_S10")
    step = [s for s in r.trace.steps if s.message.startswith("retrieval text")]
    assert step and step[0].data["query"] == "Bluetooth headphones"
    assert all(e.domain == "Galaxy_S10" for e in r.evidence)


def test_stripping_and_collections_never_bypass_acl(open_kb):
    kb = open_kb(routes=("hybrid", "toc", "graph"))
    for q in (f"HR Policies, section policies: {SECRET_TITLE} {SECRET_WORD}",
              f"On HR Policies {SECRET_WORD} band"):
        for kw in ({}, {"domain": "HR_Policies"}, {"groups": ["staff"]}):
            r = kb.query(q, **kw)
            assert not any(SECRET_TITLE in e.path or SECRET_WORD in e.text for e in r.evidence), (q, kw)


def test_weighted_rrf_lets_a_route_count_less():
    a = SectionList("hybrid", [SectionHit(1, 0.0, (1,), ("hybrid",)), SectionHit(2, 0.0, (2,), ("hybrid",))])
    b = SectionList("toc", [SectionHit(2, 0.0, (2,), ("toc",)), SectionHit(3, 0.0, (3,), ("toc",))])
    rank = np.arange(4)
    plain = fuse([a, b], rank, "rrf", 60)
    assert plain[0].section == 2                             # agreement wins with equal weights
    weighted = fuse([a, b], rank, "rrf", 1, weights={"toc": 0.1})
    assert [h.section for h in weighted][:2] == [1, 2] and weighted[0].routes == ("hybrid",)


def test_evidence_is_one_item_per_section_with_its_matched_passage(kb):
    c = kb.data.contents
    r = kb.query("battery charging wireless powershare", k=5)
    assert r.evidence
    sections = [e.section_id for e in r.evidence]
    assert all(sections) and len(set(sections)) == len(sections)   # at most one item per section
    row_of = {c.ids[i]: i for i in range(len(c))}
    for e in r.evidence:
        rows = [row_of[cid] for cid in e.chunk_ids]
        assert e.chunk_id in e.chunk_ids
        members = list(kb.data.sections.rows[kb.data.sections.of_row[rows[0]]])
        pos = [members.index(i) for i in rows]
        assert pos == sorted(pos)                                    # reading order
        assert {c.parent_id[i] for i in rows} == {e.section_id}      # all from the one section
        assert c.text[row_of[e.chunk_id]].strip()[:40] in e.text     # the matched chunk is shown


def test_one_document_takes_at_most_half_of_k_while_others_score(kb):
    r = kb.query("battery", k=4)
    from collections import Counter

    c = kb.data.contents
    row_of = {c.ids[i]: i for i in range(len(c))}
    docs = [c.source[row_of[e.chunk_id]] for e in r.evidence]
    assert len(r.evidence) == 4 and len(set(docs)) > 1
    assert max(Counter(docs).values()) <= 2


def test_masks_are_cached_per_scope_and_answer_for_the_rows_asked(kb):
    from vdgr_core.query.scope import QueryScope
    from vdgr_core.store.filters import SearchScope

    c = kb.data.contents
    sc = QueryScope(SearchScope(groups=(), domains=("Galaxy_S10",)))
    m1, m2 = c.mask(sc), c.mask(sc)
    assert m1 is m2
    rows = np.arange(len(c))
    inside = m1[rows]
    assert inside.any() and {c.domain[r] for r in rows[inside]} == {"Galaxy_S10"}
    assert all(m1[int(r)] == bool(inside[i]) for i, r in enumerate(rows))     # scalar = vector answer
    local = m1.local("Galaxy_S10")
    assert not local.flags.writeable and local is m1.local("Galaxy_S10")


def test_exact_vector_search_equals_a_brute_force_scan(kb):
    from schemas import tables as T
    from vdgr_core.query.scope import QueryScope
    from vdgr_core.store.filters import SearchScope

    c = kb.data.contents
    q = kb.embedder.embed(["battery"])[0]
    sc = QueryScope(SearchScope(groups=(), domains=("Galaxy_S10",), versions=("1.0",)))
    got = kb.vectors.search(T.CONTENTS, q, sc, 5)
    table = kb.reader.table(T.CONTENTS).to_arrow().to_pylist()
    sims = sorted(((float(np.dot(r["vector"], q)), c.row(r["domain"], r["chunk_id"])) for r in table
                   if r["domain"] == "Galaxy_S10" and r["version"] == "1.0" and r["public"]),
                  key=lambda x: (-x[0], x[1]))[:5]
    assert [r for r, _ in got] == [r for _, r in sims]
    assert np.allclose([s for _, s in got], [s for s, _ in sims], atol=1e-5)
