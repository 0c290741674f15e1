import numpy as np
import scipy.sparse as sp

from vdgr_core.query.fusion import Fused, Ranked, merge_fused, rrf
from vdgr_core.query.ppr import personalized_pagerank


def test_rrf_scores_ranks_and_unites_routes():
    a = Ranked("bm25", [(1, 9.0), (2, 5.0), (3, 1.0)])
    b = Ranked("dense", [(3, 0.9), (1, 0.8)])
    out = rrf([a, b], rrf_k=60)
    assert [f.row for f in out] == [1, 3, 2]
    assert out[0].score == 1 / 61 + 1 / 62
    assert out[0].routes == ("bm25", "dense")
    assert out[2].routes == ("bm25",)


def test_rrf_ties_broken_by_id_rank_and_limit():
    a = Ranked("x", [(5, 1.0)])
    b = Ranked("y", [(4, 1.0)])
    id_rank = np.array([0, 0, 0, 0, 7, 3])   # row 5 has the smaller id
    assert [f.row for f in rrf([a, b], 60, id_rank)] == [5, 4]
    assert len(rrf([a, b], 60, id_rank, limit=1)) == 1


def test_merge_fused_keeps_every_route():
    first = [Fused(1, 0.1, ("hybrid",)), Fused(2, 0.05, ("toc",))]
    second = [Fused(2, 0.2, ("graph",))]
    out = merge_fused([first, second], 60)
    assert out[0].row == 2 and out[0].routes == ("toc", "graph")


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


def test_convex_fusion_uses_normalized_scores():
    from vdgr_core.query.fusion import convex

    # bm25 has one clear winner; dense barely separates its first three: the decisive list decides
    bm = Ranked("bm25", [(1, 20.0), (2, 2.0), (3, 1.0)])
    de = Ranked("dense", [(2, 0.62), (3, 0.60), (1, 0.58), (4, 0.20)])
    out = convex([bm, de])
    assert out[0].row == 1 and out[0].routes == ("bm25", "dense")
    assert abs(out[0].score - (0.5 * 1.0 + 0.5 * 0.38 / 0.42)) < 1e-12
    assert [f.row for f in rrf([bm, de], 60)][0] == 2          # RRF: ranks only
    # a row missing from a list counts 0 there; a flat list maps to 1; limit
    out = convex([Ranked("bm25", [(7, 3.0)]), Ranked("dense", [])], limit=1)
    assert [(f.row, f.score) for f in out] == [(7, 1.0)]


def test_anchored_rrf_secondary_routes_only_add_rows():
    from vdgr_core.query.fusion import anchored_rrf

    hybrid = Ranked("hybrid", [(1, 0.0), (2, 0.0), (3, 0.0)])
    toc = Ranked("toc", [(3, 0.0), (9, 0.0)])
    graph = Ranked("graph", [(3, 0.0), (9, 0.0), (8, 0.0)])
    w = {"hybrid": 1.0, "toc": 0.5, "graph": 0.5}
    out = anchored_rrf([hybrid], [toc, graph], 60, weights=w)
    rows = [f.row for f in out]
    assert [r for r in rows if r in (1, 2, 3)] == [1, 2, 3]     # route 1's order is kept
    assert rrf([hybrid, toc, graph], 60, weights=w)[0].row == 3  # plain RRF lifts row 3 to the top
    assert set(rows) == {1, 2, 3, 8, 9}
    by_row = {f.row: f for f in out}
    assert by_row[3].routes == ("hybrid", "toc", "graph")       # provenance kept
    assert by_row[3].score == 1 / 63                             # route 1 alone
    assert by_row[9].score == 0.5 / 62 + 0.5 / 62                # placed by its own score
    assert rows == [1, 2, 9, 3, 8]                               # 9 ties 2: row id decides
    # no route-1 list: plain weighted RRF over the others
    assert [f.row for f in anchored_rrf([], [toc, graph], 60, weights=w)][0] == 3
