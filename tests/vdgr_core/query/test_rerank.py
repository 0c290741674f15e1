"""Offline section re-scoring (reranker kind "section")."""


def test_section_rescorer_lifts_the_section_that_covers_the_question(kb):
    """Offline re-scoring: fused with the incoming order by rank, the section holding every
    question word moves above one that holds few of them."""
    from schemas.config import RerankerConfig
    from vdgr_core.query.fusion import SectionHit
    from vdgr_core.query.rerank import make_reranker
    from vdgr_core.query.textutil import overlap, terms

    data = kb.data
    question = "Wireless PowerShare battery level percent"
    q = terms(question)
    cover = {s: overlap(q, " ".join(data.contents.text[int(r)] for r in data.sections.rows[s]))
             for s in range(len(data.sections))}
    best = max(cover, key=cover.get)
    order = sorted(cover, key=lambda s: cover[s])[:3] + [best]      # the best coverage comes last
    hits = [SectionHit(s, 1.0 - i / 10, (int(data.sections.rows[s][0]),), ("hybrid",)) for i, s in enumerate(order)]
    out = make_reranker(RerankerConfig(kind="section")).rerank(question, hits, data)
    assert sorted(h.section for h in out) == sorted(order)
    assert [h.section for h in out].index(best) < 3
    assert out[0].section == order[0] or out[0].section == best            # RRF: the incoming head still counts
