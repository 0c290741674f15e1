"""Document-level delta functions: each recomputes what the build's transforms compute."""
from schemas.records import DirectoryNode
from schemas.tables import CONTAINS, COOCCURS, HAS_ENTITY
from vdgr_core.ids import entity_id
from vdgr_core.indexing import domain_delta as delta


def _row(cid, source, text, terms, domain="d", parent="sec"):
    return {"chunk_id": cid, "doc_id": "doc-" + source, "text": text, "source": source, "title": "T",
            "path": [domain, "T"], "parent_id": parent, "domain": domain, "collection": "", "version": "",
            "acl": [], "position": 0, "n_tokens": 5, "summary": "s", "entities": [t[0] for t in terms],
            "terms": [{"norm": n, "name": name, "kind": kind, "score": score, "mentions": m}
                      for n, name, kind, score, m in terms]}


WIFI = ("wifi", "Wi-Fi", "multiword", 0.5, 1)
LTE = ("lte", "LTE", "acronym", 0.7, 1)


def test_entities_come_from_the_stored_terms_of_every_chunk_of_the_domain():
    rows = [_row("c1", "a.md", "Wi-Fi and LTE.", [WIFI, LTE]),
            _row("c2", "b.md", "Wi-Fi again.", [("wifi", "WiFi", "multiword", 0.4, 2)])]
    entities, existence = delta.entities_and_existence(rows)
    wifi = next(e for e in entities if e["norm"] == "wifi")
    assert (wifi["frequency"], wifi["chunk_frequency"], wifi["doc_frequency"]) == (3, 2, 2)
    assert wifi["name"] == "WiFi"                       # most mentions wins
    assert wifi["entity_id"] == entity_id("d", "wifi")
    assert sorted((e["src"], e["weight"]) for e in existence if e["dst"] == wifi["entity_id"]) == [
        ("c1", 1.0), ("c2", 2.0)]
    assert {e["kind"] for e in existence} == {HAS_ENTITY}


def test_cooccurrence_weights_lose_the_sentences_of_leaving_chunks():
    leaving = _row("c1", "a.md", "Wi-Fi and LTE work. LTE and Wi-Fi again.", [WIFI, LTE])
    staying = _row("c2", "b.md", "Wi-Fi with LTE.", [WIFI, LTE])
    src, dst = sorted((entity_id("d", "wifi"), entity_id("d", "lte")))
    old = [{"domain": "d", "src": src, "dst": dst, "weight": 3.0}]      # 2 sentences + 1 sentence
    after = delta.cooccurrence_after(old, [leaving], [])
    assert [(e["kind"], e["src"], e["dst"], e["weight"]) for e in after] == [(COOCCURS, src, dst, 1.0)]
    assert delta.cooccurrence_after(after, [staying], []) == []          # weight 0: the edge goes
    back = delta.cooccurrence_after([], [], [staying])
    assert back == after


def _node(path, parent="", kind="section", source="", acl=(), sources=(), summary=""):
    return DirectoryNode(node_id="/".join(path), full_path=tuple(path), parent_id=parent, domain=path[0],
                         collection="", version="", title=path[-1], level=len(path) - 1, kind=kind,
                         acl=tuple(acl), source=source, sources=tuple(sources), summary=summary)


ROOT = _node(["d"], kind="domain")
DOC_A = _node(["d", "Guide"], "d", "document", "a.md", sources=["a.md", "b.md"], summary="old")
SEC_A = _node(["d", "Guide", "Setup"], "d/Guide", "section", "a.md", sources=["a.md"], summary="old")


def test_a_node_shared_by_two_documents_survives_when_one_leaves():
    parsed = []

    def parse(paths):
        parsed.append(tuple(paths))
        return {"b.md": [_node(["d", "Guide"], "d", "document", "b.md", acl=["hr"])]}

    merge = delta.merge_nodes_after([ROOT, DOC_A, SEC_A], ["a.md"], [], [ROOT], parse)
    assert parsed == [("b.md",)]                                       # the co-contributor only
    by_id = {n.node_id: n for n in merge.nodes}
    assert set(by_id) == {"d", "d/Guide"}
    assert merge.removed == {"d/Guide/Setup"}
    assert by_id["d/Guide"].sources == ("b.md",) and by_id["d/Guide"].acl == ("hr",)
    assert by_id["d"].summary == ""                                     # untouched: kept as stored
    assert merge.old_parents == {"d", "d/Guide"}


def test_untouched_nodes_are_kept_and_a_new_folder_is_added():
    folder = _node(["d", "New"], "d", "folder")
    merge = delta.merge_nodes_after([ROOT, DOC_A, SEC_A], [], [], [ROOT, folder], lambda p: {})
    assert merge.touched == {"d/New"} and not merge.removed
    assert {n.node_id: n.summary for n in merge.nodes}["d/Guide"] == "old"


def test_summaries_are_made_again_for_the_seeds_and_their_ancestors_only():
    nodes = [ROOT, DOC_A, SEC_A, _node(["d", "Other"], "d", "document", "c.md")]
    assert delta.nodes_to_summarize(nodes, ["d/Guide/Setup", "gone"]) == {"d/Guide/Setup", "d/Guide", "d"}


def test_containment_edges_link_parents_to_nodes_and_chunks():
    edges = delta.containment_edges([ROOT, DOC_A], [_row("c1", "a.md", "x", [], parent="d/Guide")])
    assert sorted((e["kind"], e["src"], e["dst"]) for e in edges) == [
        (CONTAINS, "d", "d/Guide"), (CONTAINS, "d/Guide", "c1")]
