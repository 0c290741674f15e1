"""BM25 shards: one ``body`` field (heading + text), ACL pre-filter, legacy shards still read."""
import os

import tantivy

from vdgr_core.store.filters import SearchScope
from vdgr_core.store.tantivy_shard import (
    BODY_FIELDS, LEGACY_FIELDS, ShardSearcher, body_text, build_shard, shard_digest,
)

PUBLIC = SearchScope(groups=())


def _row(cid, title, text, path, acl=()):
    return {"chunk_id": cid, "title": title, "text": text, "path": list(path), "version": "1", "acl": list(acl)}


ROWS = [
    # the section "Camera" itself, and a sub-section whose ancestors include "Camera"
    _row("c1", "Camera", "Take pictures and record videos.", ["Apps", "Camera"]),
    _row("c2", "Scene optimizer", "Adjusts color settings automatically.", ["Apps", "Camera", "Scene optimizer"]),
    _row("c3", "Wireless PowerShare", "Charge another device with your phone.", ["Settings", "Battery", "Wireless PowerShare"]),
    _row("c4", "Salary bands", "Quorvex band table.", ["HR", "Salary bands"], acl=["hr"]),
]


def _shard(tmp_path, rows=ROWS):
    info = build_shard(str(tmp_path), "d", rows)
    return ShardSearcher(os.path.join(str(tmp_path), info.folder))


def test_heading_and_text_are_one_unit_and_ancestors_do_not_match(tmp_path):
    s = _shard(tmp_path)
    assert s.fields == BODY_FIELDS
    assert [c for c, _ in s.search("PowerShare", 5, PUBLIC)] == ["c3"]          # heading word
    # "camera" is only an ancestor title of c2: it matches the Camera section alone
    assert [c for c, _ in s.search("camera", 5, PUBLIC)] == ["c1"]
    assert [c for c, _ in s.search("color settings", 5, PUBLIC)] == ["c2"]    # text words


def test_acl_is_a_pre_filter(tmp_path):
    s = _shard(tmp_path)
    assert s.search("Quorvex", 5, PUBLIC) == []
    assert [c for c, _ in s.search("Quorvex", 5, SearchScope(groups=("hr",)))] == ["c4"]


def test_body_text_and_digest():
    assert body_text("Camera", "Take pictures.") == "Camera\nTake pictures."
    assert body_text("", "x") == "x"
    assert shard_digest(ROWS) == shard_digest(list(reversed(ROWS)))


def test_shard_of_the_previous_schema_is_still_searched(tmp_path):
    """Shards built before the ``body`` field (text / title / path_text) stay readable, and
    their access filter uses their own schema's field ids."""
    b = tantivy.SchemaBuilder()
    b.add_text_field("chunk_id", stored=True, tokenizer_name="raw")
    for f in ("text", "title", "path_text"):
        b.add_text_field(f, stored=False, tokenizer_name="en_stem")
    for f in ("domain", "version", "acl", "public"):
        b.add_text_field(f, stored=False, tokenizer_name="raw")
    path = str(tmp_path / "legacy")
    os.makedirs(path)
    index = tantivy.Index(b.build(), path=path)
    w = index.writer(heap_size=15_000_000, num_threads=1)
    for r in ROWS:
        w.add_document(tantivy.Document(chunk_id=r["chunk_id"], text=r["text"], title=r["title"],
                                        path_text=" ".join(r["path"]), domain="d", version="1",
                                        acl=list(r["acl"]) or [""], public="0" if r["acl"] else "1"))
    w.commit()
    w.wait_merging_threads()
    s = ShardSearcher(path)
    assert s.fields == LEGACY_FIELDS
    assert [c for c, _ in s.search("camera", 5, PUBLIC)] == ["c1"]      # path_text not searched
    assert s.search("Quorvex", 5, PUBLIC) == []
    assert [c for c, _ in s.search("Quorvex", 5, SearchScope(groups=("hr",)))] == ["c4"]
