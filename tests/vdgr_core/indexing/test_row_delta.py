"""Row-level update functions: what leaving and arriving chunks change, and nothing else."""
import numpy as np

from schemas.records import DirectoryNode
from schemas.tables import CONTAINS, COOCCURS, HAS_ENTITY
from vdgr_core.ids import entity_id
from vdgr_core.indexing import row_delta
from vdgr_core.indexing.tree_summary import summarize_node


def _row(cid, source, text, terms, domain="d", parent="sec", vector=(1.0, 0.0)):
    return {"chunk_id": cid, "doc_id": "doc-" + source, "text": text, "source": source, "title": "T",
            "path": [domain, "T"], "parent_id": parent, "domain": domain, "collection": "", "version": "",
            "acl": [], "position": 0, "n_tokens": 5, "summary": "s", "entities": [t[0] for t in terms],
            "terms": [{"norm": n, "name": name, "kind": kind, "score": score, "mentions": m}
                      for n, name, kind, score, m in terms], "vector": np.asarray(vector, np.float32)}


WIFI = ("wifi", "Wi-Fi", "multiword", 0.5, 1)
LTE = ("lte", "LTE", "acronym", 0.7, 1)


def test_entity_partials_count_mentions_chunks_documents_and_sum_vectors():
    rows = [_row("c1", "a.md", "Wi-Fi and LTE.", [WIFI, LTE]),
            _row("c2", "a.md", "Wi-Fi again.", [("wifi", "WiFi", "multiword", 0.4, 2)], vector=(0.0, 1.0)),
            _row("c3", "b.md", "Wi-Fi.", [WIFI])]
    wifi = row_delta.entity_partials(rows)[("d", "wifi")]
    assert (wifi.frequency, wifi.chunks, wifi.docs) == (4, 3, 2)
    assert wifi.names == {"Wi-Fi": 2, "WiFi": 2}
    assert (wifi.vector_sum == np.rint(np.array([2.0, 1.0]) * 2 ** 40)).all()
    # subtracting a document's share gives the statistics without it
    rest = row_delta.entity_partials(rows[2:])[("d", "wifi")]
    left = row_delta.entity_partials(rows).get(("d", "wifi")).subtract(row_delta.entity_partials(rows[:2])[("d", "wifi")])
    assert (left.frequency, left.chunks, left.docs, dict(left.names)) == (rest.frequency, rest.chunks, rest.docs,
                                                                        dict(rest.names))
    assert (left.vector_sum == rest.vector_sum).all()


def test_pair_weights_lose_the_sentences_of_leaving_chunks():
    leaving = _row("c1", "a.md", "Wi-Fi and LTE work. LTE and Wi-Fi again.", [WIFI, LTE])
    staying = _row("c2", "b.md", "Wi-Fi with LTE.", [WIFI, LTE])
    src, dst = sorted((entity_id("d", "wifi"), entity_id("d", "lte")))
    old = {("d", src, dst): 3.0}                                     # 2 sentences + 1 sentence
    after = row_delta.pair_edges_after(old, row_delta.pair_weights([leaving]), {})
    assert [(e["kind"], e["src"], e["dst"], e["weight"]) for e in after] == [(COOCCURS, src, dst, 1.0)]
    assert row_delta.pair_edges_after({("d", src, dst): 1.0}, row_delta.pair_weights([staying]), {}) == []
    assert row_delta.pair_edges_after({}, {}, row_delta.pair_weights([staying])) == after


def test_content_edges_link_sections_to_chunks_and_chunks_to_entities():
    edges = row_delta.content_edges([_row("c1", "a.md", "x", [WIFI], parent="d/Guide")])
    assert sorted((e["kind"], e["src"], e["dst"], e["weight"]) for e in edges) == sorted([
        (CONTAINS, "d/Guide", "c1", 1.0), (HAS_ENTITY, "c1", entity_id("d", "wifi"), 1.0)])


def _node(path, parent="", summary=""):
    return DirectoryNode(node_id="/".join(path), full_path=tuple(path), parent_id=parent, domain=path[0],
                         collection="", version="", title=path[-1], level=len(path) - 1, kind="section",
                         acl=(), summary=summary)


def test_resummarize_makes_only_the_given_nodes_again_from_current_children():
    nodes = {n.node_id: n for n in [_node(["d"]), _node(["d", "A"], "d", "Stored summary of A."),
                                    _node(["d", "B"], "d", "Stored summary of B.")]}
    children = {"d": ["d/A", "d/B"]}
    own = {"d/B": [(0, "Port four carries the uplink traffic.", ())]}
    done = row_delta.resummarize(["d", "d/B"], nodes, children, own, None, max_chars=600)
    assert set(done) == {"d", "d/B"}
    assert "uplink" in done["d/B"].summary and "Stored summary of B" not in done["d"].summary
    # the parent reads the untouched child's stored summary and the new one of the other
    expected = summarize_node(nodes["d"], [], [nodes["d/A"], done["d/B"]], None, max_chars=600)
    assert done["d"].summary == expected.summary
