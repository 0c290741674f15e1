import numpy as np
import scipy.sparse as sp

from vdgr_core.query.fusion import (Ranked, SectionHit, SectionList, add_candidates, by_section,
                                    cap_per_document, fuse)
from vdgr_core.query.ppr import personalized_pagerank


def _sl(route, pairs):
    """A section list from (section, score) pairs; each section's matched row is 10*section."""
    return SectionList(route, [SectionHit(s, v, (10 * s,), (route,)) for s, v in pairs])


RANK = np.arange(20)


def test_rrf_scores_ranks_and_unites_routes():
    a = _sl("bm25", [(1, 9.0), (2, 5.0), (3, 1.0)])
    b = _sl("dense", [(3, 0.9), (1, 0.8)])
    out = fuse([a, b], RANK, "rrf", rrf_k=60)
    assert [h.section for h in out] == [1, 3, 2]
    assert out[0].score == 1 / 61 + 1 / 62
    assert out[0].routes == ("bm25", "dense")
    assert out[2].routes == ("bm25",)
    # route renaming: the halves of route 1 report "hybrid"
    assert fuse([a, b], RANK, "rrf", route="hybrid")[0].routes == ("hybrid",)


def test_fusion_ties_broken_by_section_rank():
    a = _sl("x", [(5, 1.0)])
    b = _sl("y", [(4, 1.0)])
    rank = np.array([0, 0, 0, 0, 7, 3])   # section 5 has the smaller rank
    assert [h.section for h in fuse([a, b], rank, "rrf")] == [5, 4]


def test_by_section_scores_a_section_by_its_best_chunk_only():
    # rows 0,1,2 belong to section 0 (a long section), row 3 to section 1
    section_of = np.array([0, 0, 0, 1])
    got = by_section(Ranked("dense", [(0, 0.80), (1, 0.79), (3, 0.81), (2, 0.78)]), section_of)
    by = {h.section: h for h in got.hits}
    assert by[0].score == 0.80 and by[0].rows == (0, 1, 2)    # no bonus for three matching chunks
    assert by[1].score == 0.81
    assert [h.section for h in got.hits] == [0, 1]            # order of first match
    assert len(by_section(Ranked("d", [(0, 1.0), (3, 0.5)]), section_of, limit=1).hits) == 1


def test_convex_fusion_uses_normalized_scores():
    # bm25 has one clear winner; dense barely separates its first three: the decisive list decides
    bm = _sl("bm25", [(1, 20.0), (2, 2.0), (3, 1.0)])
    de = _sl("dense", [(2, 0.62), (3, 0.60), (1, 0.58), (4, 0.20)])
    out = fuse([bm, de], RANK, "convex")
    assert out[0].section == 1 and out[0].routes == ("bm25", "dense")
    assert abs(out[0].score - (1.0 + 0.38 / 0.42)) < 1e-12
    assert fuse([bm, de], RANK, "rrf")[0].section == 2         # RRF: ranks only
    # a flat list maps to 1
    out = fuse([_sl("bm25", [(7, 3.0)]), SectionList("dense", [])], RANK, "convex")
    assert [(h.section, h.score) for h in out] == [(7, 1.0)]


def test_zscore_fusion_weighs_a_list_by_how_far_its_best_stand_out():
    # dense barely prefers 2 over 1; bm25 puts 1 far above the rest: the decisive list wins
    bm = _sl("bm25", [(1, 30.0), (2, 3.0), (3, 2.9), (4, 2.8), (5, 2.7)])
    de = _sl("dense", [(2, 0.61), (1, 0.60), (3, 0.60), (4, 0.59), (5, 0.59)])
    assert fuse([bm, de], RANK, "zscore")[0].section == 1
    # weights scale a list's contribution
    assert fuse([bm, de], RANK, "zscore", weights={"bm25": 0.0})[0].section == 2


def test_add_candidates_keeps_the_first_round_head():
    anchor = [SectionHit(s, 1.0 - s / 10, (s,), ("hybrid",)) for s in (1, 2, 3, 4)]
    extra = [SectionHit(9, 5.0, (90,), ("reflection",)), SectionHit(3, 5.0, (31,), ("reflection",)),
             SectionHit(8, 4.0, (80,), ("reflection",))]
    out = add_candidates(anchor, extra, start=2)
    assert [h.section for h in out] == [1, 2, 9, 3, 8, 4]
    by = {h.section: h for h in out}
    assert by[3].rows == (3, 31) and by[3].routes == ("hybrid", "reflection")
    assert by[1].routes == ("hybrid",)


def test_cap_per_document_holds_back_a_dominant_document():
    doc_of = np.array([0, 0, 0, 0, 1, 2])     # sections 0-3 in document 0
    hits = [SectionHit(s, 1.0, (s,), ("h",)) for s in (0, 1, 2, 3, 4, 5)]
    out = cap_per_document(hits, doc_of, k=4)
    assert [h.section for h in out[:4]] == [0, 1, 4, 5]
    assert [h.section for h in out] == [0, 1, 4, 5, 2, 3]      # nothing lost
    # only one document available: the first k are filled from it, in order
    one = [SectionHit(s, 1.0, (s,), ("h",)) for s in (0, 1, 2, 3)]
    assert [h.section for h in cap_per_document(one, doc_of, k=4)] == [0, 1, 2, 3]


def _dense_ppr(adj, p, d=0.85):
    n = adj.shape[0]
    out = adj.sum(axis=1)
    w = np.zeros_like(adj, dtype=float)
    for i in range(n):
        w[i] = adj[i] / out[i] if out[i] else p / p.sum()   # dangling rows restart at p
    p = p / p.sum()
    return (1 - d) * np.linalg.solve(np.eye(n) - d * w.T, p)


def test_ppr_matches_closed_form_on_hand_made_graph():
    # path 0-1-2-3 plus a dangling directed edge 3->4
    adj = np.zeros((5, 5))
    for a, b in [(0, 1), (1, 2), (2, 3)]:
        adj[a, b] = adj[b, a] = 1.0
    adj[3, 4] = 2.0
    p = np.array([1.0, 0, 0, 0, 0])
    got = personalized_pagerank(sp.csr_matrix(adj), p)
    want = _dense_ppr(adj, p)
    want = want / want.sum()
    assert np.allclose(got, want, atol=1e-8)
    assert abs(got.sum() - 1) < 1e-12
    assert got[1] > got[2] and got[0] > got[2]


def test_ppr_prefers_nodes_near_the_seed():
    # two triangles joined by one edge; seed in the left one
    edges = [(0, 1), (1, 2), (0, 2), (2, 3), (3, 4), (4, 5), (3, 5)]
    adj = sp.lil_matrix((6, 6))
    for a, b in edges:
        adj[a, b] = adj[b, a] = 1.0
    r = personalized_pagerank(adj.tocsr(), np.array([0, 1.0, 0, 0, 0, 0]))
    assert r[:3].sum() > r[3:].sum()
    assert r.argmax() == 1
