"""Domain-name stripping, named collections, weighted fusion, parent-document scoring, caches."""
import numpy as np
import pytest

from tests.support.tiny_index import SECRET_TITLE, SECRET_WORD
from vdgr_core.query.fusion import Fused, Ranked, merge_fused, prefer_rows, rrf
from vdgr_core.query.hybrid import parent_grouped
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
    a = Ranked("hybrid", [(1, 0.0), (2, 0.0)])
    b = Ranked("toc", [(2, 0.0), (3, 0.0)])
    plain = rrf([a, b], 60)
    assert plain[0].row == 2                             # agreement wins with equal weights
    weighted = rrf([a, b], 1, weights={"toc": 0.1})
    assert [f.row for f in weighted][:2] == [1, 2] and weighted[0].routes == ("hybrid",)


def test_merge_fused_weights_runs():
    first = [Fused(1, 1.0, ("hybrid",)), Fused(2, 0.5, ("hybrid",))]
    refined = [Fused(3, 1.0, ("graph",)), Fused(2, 0.5, ("graph",))]
    assert merge_fused([first, refined], 1, weights=(1.0, 0.2))[0].row == 1
    assert merge_fused([first, refined], 1)[0].row == 2


def test_prefer_rows_boosts_and_resorts():
    fused = [Fused(0, 1.0, ("a",)), Fused(1, 0.8, ("a",)), Fused(2, 0.3, ("a",))]
    pref = np.array([False, True, False])
    out = prefer_rows(fused, pref, 2.0)
    assert [f.row for f in out] == [1, 0, 2] and out[0].score == pytest.approx(1.6)


def test_parent_grouped_ranks_sections_by_their_chunks(kb):
    c = kb.data.contents
    by_parent = {}
    for r in range(len(c)):
        by_parent.setdefault(c.parent_id[r], []).append(r)
    multi = next(rows for rows in by_parent.values() if len(rows) >= 2)
    single = next(rows for rows in by_parent.values() if len(rows) == 1)
    # one chunk of a single-chunk section scores best alone; two chunks of one section together
    hits = [(single[0], 1.0), (multi[0], 0.9), (multi[1], 0.9)]
    out = parent_grouped(hits, kb.data, 3)
    assert [r for r, _ in out][:2] == [multi[0], multi[1]] or [r for r, _ in out][:2] == [multi[1], multi[0]]
    assert out[-1][0] == single[0]


def test_masks_and_similarities_are_cached_read_only(kb):
    from vdgr_core.query.data import QueryScope
    from vdgr_core.store.filters import SearchScope

    c = kb.data.contents
    sc = QueryScope(SearchScope(groups=(), domains=("Galaxy_S10",)))
    m1, m2 = c.mask(sc), c.mask(sc)
    assert m1 is m2 and not m1.flags.writeable
    assert set(c.domain[m1]) == {"Galaxy_S10"}
    q = kb.embedder.embed(["battery"])[0]
    s1 = c.similarities(q)
    assert s1 is c.similarities(q) and not s1.flags.writeable
    assert np.allclose(s1, c.vectors @ q)
