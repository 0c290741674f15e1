"""The re-merge of the directory nodes a change touches (stored rows back into records)."""
from schemas.records import DirectoryNode
from vdgr_core.indexing import domain_delta as delta


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
