import numpy as np
import scipy.sparse as sp

from vdgr_core.query.fusion import (Ranked, SectionHit, SectionList, add_candidates, by_section,
                                    cap_per_document, fuse, with_first_hop)
from vdgr_core.query.graph_route import query_norms
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


def test_zscore_scores_a_section_missing_from_a_list_at_that_lists_floor():
    # the S10 failure: BM25's decisive first hit (section 1) is not among dense's candidates,
    # while dense's flat top (6, 7) also sits low in BM25. Scored from the mean (or capped at
    # mean - 3 deviations) the missing section lost to sections both lists returned.
    bm = _sl("bm25", [(1, 15.7), (2, 11.5), (3, 8.5), (4, 8.4), (5, 8.3), (6, 8.0), (7, 7.9)])
    de = _sl("dense", [(6, 0.57), (7, 0.54), (2, 0.47), (8, 0.47), (9, 0.46), (10, 0.46)])
    out = fuse([bm, de], RANK, "zscore")
    assert out[0].section == 1
    # a list's contribution is (score - its floor) / its deviation: its last candidate adds 0
    sd = float(np.std([0.57, 0.54, 0.47, 0.47, 0.46, 0.46]))
    by = {h.section: h.score for h in out}
    assert abs(by[10] - 0.0) < 1e-12 and abs(by[9] - 0.0) < 1e-12
    assert abs(by[8] - 0.01 / sd) < 1e-9
    # a single candidate counts one deviation
    assert [h.score for h in fuse([_sl("bm25", [(3, 4.0)]), _sl("dense", [])], RANK, "zscore")] == [1.0]


def test_with_first_hop_merges_rows_and_routes_and_keeps_unreached_sections():
    first = [SectionHit(1, 3.0, (10, 11), ("hybrid",)), SectionHit(2, 2.0, (20,), ("hybrid",)),
             SectionHit(3, 1.0, (30,), ("hybrid",))]
    walk = SectionList("graph", [SectionHit(1, 0.5, (12, 10), ("graph",)), SectionHit(9, 0.2, (90,), ("graph",)),
                                 SectionHit(2, 0.1, (20,), ("graph",))])
    out = with_first_hop(walk, first, limit=10).hits
    assert [h.section for h in out] == [1, 9, 2, 3]       # the walk's order, then the unreached
    assert out[0].rows == (10, 11, 12) and out[0].routes == ("hybrid", "graph")
    assert out[1].routes == ("graph",)
    assert out[3].score == 0.1 and out[3].routes == ("hybrid",)
    assert len(with_first_hop(walk, first, limit=2).hits) == 2
    # no graph (an empty walk): route 1's list comes back
    assert [h.section for h in with_first_hop(SectionList("graph", []), first, 5).hits] == [1, 2, 3]


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


def test_ppr_sums_repeated_edges_and_leaves_its_input_alone():
    # the same graph as above, its edges given as unsummed repeats (0-1 twice at 0.5, 3->4 as 1 + 1)
    indptr = np.array([0, 2, 4, 6, 9, 9])
    indices = np.array([1, 1, 0, 2, 1, 3, 2, 4, 4])
    data = np.array([0.5, 0.5, 1, 1, 1, 1, 1, 1, 1])
    repeated = sp.csr_matrix((data, indices, indptr), shape=(5, 5))
    assert not repeated.has_canonical_format
    before = (repeated.data.copy(), repeated.indices.copy(), repeated.indptr.copy())
    p = np.array([1.0, 0, 0, 0, 0])
    adj = np.zeros((5, 5))
    for a, b in [(0, 1), (1, 2), (2, 3)]:
        adj[a, b] = adj[b, a] = 1.0
    adj[3, 4] = 2.0
    assert np.allclose(personalized_pagerank(repeated, p), personalized_pagerank(sp.csr_matrix(adj), p), atol=1e-12)
    assert all(np.array_equal(x, y) for x, y in zip(before, (repeated.data, repeated.indices, repeated.indptr)))


def test_ppr_prefers_nodes_near_the_seed():
    # two triangles joined by one edge; seed in the left one
    edges = [(0, 1), (1, 2), (0, 2), (2, 3), (3, 4), (4, 5), (3, 5)]
    adj = sp.lil_matrix((6, 6))
    for a, b in edges:
        adj[a, b] = adj[b, a] = 1.0
    r = personalized_pagerank(adj.tocsr(), np.array([0, 1.0, 0, 0, 0, 0]))
    assert r[:3].sum() > r[3:].sum()
    assert r.argmax() == 1


def test_synonym_edges_join_near_identical_entity_vectors_only():
    from vdgr_core.store.layout_build import synonym_edges

    v = np.array([[1.0, 0.0, 0.0], [0.999, 0.0447, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], dtype=np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    m = synonym_edges(v, 0.95).toarray()
    assert m[0, 1] > 0.95 and m[1, 0] == m[0, 1]           # symmetric, weighted by the cosine
    assert m[0, 2] == 0 and m[2, 3] == 0 and np.all(np.diag(m) == 0)
    assert synonym_edges(v, 1.01).nnz == 0                   # above 1: no synonym edges
    # at most per_node edges per entity, the strongest kept
    many = np.tile(v[:1], (6, 1)) + np.arange(6)[:, None] * np.array([[0.0, 1e-3, 0.0]], dtype=np.float32)
    many /= np.linalg.norm(many, axis=1, keepdims=True)
    out = synonym_edges(many, 0.95, per_node=2).toarray()
    assert (out[0] > 0).sum() == 2 and out[0, 1] > 0 and out[0, 2] > 0


def test_with_first_hop_keeps_route_1s_best_section_first():
    first = [SectionHit(1, 3.0, (10,), ("hybrid",)), SectionHit(2, 2.0, (20,), ("hybrid",))]
    walk = SectionList("graph", [SectionHit(9, 0.6, (90,), ("graph",)), SectionHit(2, 0.3, (20,), ("graph",)),
                                 SectionHit(1, 0.2, (10, 11), ("graph",))])
    out = with_first_hop(walk, first, limit=10).hits
    assert [h.section for h in out] == [1, 9, 2]            # the head stays; the walk orders the rest
    assert out[0].score == 0.6 and out[0].rows == (10, 11) and out[0].routes == ("hybrid", "graph")
    assert [h.score for h in out] == sorted((h.score for h in out), reverse=True)
    # the head the walk did not reach still leads
    unreached = SectionList("graph", [SectionHit(9, 0.6, (90,), ("graph",))])
    assert [h.section for h in with_first_hop(unreached, first, 10).hits] == [1, 9, 2]
    # keep_head=False: the walk's order alone
    assert [h.section for h in with_first_hop(walk, first, 10, keep_head=False).hits] == [9, 2, 1]


def test_the_walks_unreached_seeds_keep_their_first_hop_places():
    first = [SectionHit(s, 1.0 - s / 10, (s * 10,), ("hybrid",)) for s in (1, 2, 3, 4, 5)]
    # the walk found 1, the neighbours 7, 8, 9, then the seed 3; it never reached the seeds 2 and 4
    walk = SectionList("graph", [SectionHit(s, w, (s * 10,), ("graph",))
                                 for s, w in ((1, 0.9), (7, 0.8), (8, 0.7), (9, 0.6), (3, 0.2))])
    assert [h.section for h in with_first_hop(walk, first, 10).hits] == [1, 7, 8, 9, 3, 2, 4, 5]
    kept = with_first_hop(walk, first, 10, seeds=4).hits
    assert [h.section for h in kept] == [1, 2, 7, 4, 8, 9, 3, 5]     # 3 was reached: the walk places it
    assert [h.score for h in kept][:5] == [0.9, 0.8, 0.8, 0.7, 0.7]  # scored as the one they go before
    assert kept[1].routes == ("hybrid",)
    # without keep_head the walk still orders the head; the later seeds keep their places
    walk2 = SectionList("graph", [SectionHit(7, 0.9, (70,), ("graph",)), SectionHit(1, 0.5, (10,), ("graph",))])
    assert [h.section for h in with_first_hop(walk2, first, 10, keep_head=False, seeds=2).hits] == [7, 2, 1, 3, 4, 5]


def test_a_question_word_of_one_letter_or_a_stopword_names_no_entity():
    # the option entities -i and -a normalize to "i" and "a": "how do I merge a branch" names neither
    norms = query_norms("How do I merge a branch with -i?")
    assert {"merge", "branch"} <= set(norms)
    assert not {"i", "a", "how", "do"} & set(norms)
