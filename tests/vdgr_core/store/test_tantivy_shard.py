"""BM25 shards: one ``body`` field (heading path + text), ACL pre-filter, older shards still read."""
import os
import random

import pytest
import tantivy

from vdgr_core.store.filters import SearchScope
from vdgr_core.store.tantivy_shard import (
    BODY_FIELDS, LEGACY_FIELDS, MultiShardSearcher, ShardSearcher, acl_partition, body_text, build_shard,
    shard_digest, subshard_count, subshard_of, update_shard,
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


def test_heading_path_and_text_are_one_unit_and_the_heading_weighs_most(tmp_path):
    s = _shard(tmp_path)
    assert s.fields == BODY_FIELDS
    assert [c for c, _ in s.search("PowerShare", 5, PUBLIC)] == ["c3"]          # heading word
    assert [c for c, _ in s.search("battery", 5, PUBLIC)] == ["c3"]             # ancestor title
    # "camera" is c1's heading and only an ancestor of c2: both match, the heading first
    assert [c for c, _ in s.search("camera", 5, PUBLIC)] == ["c1", "c2"]
    # text words first; "settings" is also an ancestor title of c3
    assert [c for c, _ in s.search("color settings", 5, PUBLIC)] == ["c2", "c3"]


def test_acl_is_a_pre_filter(tmp_path):
    s = _shard(tmp_path)
    assert s.search("Quorvex", 5, PUBLIC) == []
    assert [c for c, _ in s.search("Quorvex", 5, SearchScope(groups=("hr",)))] == ["c4"]


def test_body_text_and_digest():
    assert body_text("Camera", "Take pictures.") == "Camera\nCamera\nTake pictures."
    assert body_text("Camera", "Take pictures.", ["Apps", "Camera"]) == "Apps\nCamera\nCamera\nTake pictures."
    assert body_text("Lens", "x", ["Apps", "Camera"]) == "Apps / Camera\nLens\nLens\nx"   # path without the heading
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


def _ids(folder):
    searcher = tantivy.Index.open(folder).searcher()
    hits = searcher.search(tantivy.Query.all_query(), 100).hits
    return sorted(searcher.doc(a)["chunk_id"][0] for _, a in hits)


def test_update_shard_deletes_and_adds_on_a_copy_named_like_a_rebuild(tmp_path):
    root = str(tmp_path)
    base = build_shard(root, "d", ROWS)
    new_row = _row("c5", "Night mode", "Brighter pictures in low light.", ["Apps", "Camera", "Night mode"])
    after = [r for r in ROWS if r["chunk_id"] != "c2"] + [new_row]
    info = update_shard(root, base, [ROWS[1]], [new_row])
    fresh = build_shard(str(tmp_path / "fresh"), "d", after)
    assert (info.folder, info.digest) == (fresh.folder, fresh.digest)          # additive digest
    assert info.n_docs == 4
    assert _ids(os.path.join(root, info.folder)) == ["c1", "c3", "c4", "c5"]
    assert _ids(os.path.join(root, base.folder)) == ["c1", "c2", "c3", "c4"]       # base untouched
    s = ShardSearcher(os.path.join(root, info.folder))
    assert [c for c, _ in s.search("low light", 5, PUBLIC)] == ["c5"]
    assert s.search("color optimizer", 5, PUBLIC) == []                          # c2 deleted
    assert update_shard(root, info, after, []) is None                           # nothing left


def test_update_shard_of_a_chunk_deleted_and_added_again_keeps_it(tmp_path):
    root = str(tmp_path)
    base = build_shard(root, "d", ROWS)
    changed = dict(ROWS[0], version="2")
    info = update_shard(root, base, [ROWS[0]], [changed])
    assert _ids(os.path.join(root, info.folder)) == ["c1", "c2", "c3", "c4"]
    assert info.folder != base.folder


def test_subshards_are_powers_of_two_and_stable_per_document():
    assert [subshard_count(n, 100) for n in (0, 100, 101, 400, 401)] == [1, 1, 2, 4, 8]
    assert subshard_of("d/a.md", 1) == 0
    subs = [subshard_of(f"d/{i}.md", 4) for i in range(400)]
    assert set(subs) == {0, 1, 2, 3} and subs == [subshard_of(f"d/{i}.md", 4) for i in range(400)]


_WORDS = ("router reset firmware band scheduler antenna uplink port cable battery screen camera light "
          "signal mode channel power update network switch").split()


def _corpus_rows(n):
    rng = random.Random(7)
    return [_row(f"c{i:04d}", rng.choice(_WORDS).title(),
                 " ".join(rng.choice(_WORDS) for _ in range(rng.randint(5, 40))), ["D"]) for i in range(n)]


def test_subshards_searched_together_score_like_one_shard(tmp_path):
    """Sub-shards with domain-wide idf give one shard's scores up to the per-sub-shard average
    length: every hit's score within 2% of the single shard's, so only near-ties swap places
    (8 of the top 10 at least the same on this corpus of random word lists, full of ties)."""
    rows = _corpus_rows(600)
    single = ShardSearcher(os.path.join(str(tmp_path), build_shard(str(tmp_path), "d", rows).folder))
    parts = [build_shard(str(tmp_path), "d", [r for r in rows if subshard_of(r["chunk_id"], 4) == s], s)
             for s in range(4)]
    multi = MultiShardSearcher([os.path.join(str(tmp_path), p.folder) for p in parts])
    assert multi.num_docs == single.num_docs == 600
    for query in ("router firmware", "battery screen light", "uplink port cable", "band band scheduler"):
        one, many = dict(single.search(query, 600, PUBLIC)), dict(multi.search(query, 600, PUBLIC))
        assert set(one) == set(many), query                          # the same matches
        for cid in one:
            assert abs(one[cid] - many[cid]) <= 0.02 * one[cid], query
        top = lambda d: set(sorted(d, key=lambda c: (-d[c], c))[:10])  # noqa: E731
        assert len(top(one) & top(many)) >= 8, query
    # without domain-wide idf (each sub-shard's own) the scores would differ far more
    raw = dict(ShardSearcher(os.path.join(str(tmp_path), parts[0].folder)).search("band band scheduler", 10, PUBLIC))
    full = dict(single.search("band band scheduler", 600, PUBLIC))
    assert max(abs(raw[c] - full[c]) / full[c] for c in raw) > 0.02
    # one sub-shard alone scores the same as a plain shard search
    only = MultiShardSearcher([os.path.join(str(tmp_path), parts[0].folder)])
    plain = ShardSearcher(os.path.join(str(tmp_path), parts[0].folder))
    assert [(c, round(s, 4)) for c, s in only.search("router firmware", 10, PUBLIC)] == [
        (c, round(s, 4)) for c, s in plain.search("router firmware", 10, PUBLIC)]
    assert multi.search("Quorvex", 5, PUBLIC) == []


def test_each_acl_set_has_its_own_subshards():
    assert acl_partition(()) == 0
    assert acl_partition(["hr", "legal"]) == acl_partition(["legal", "hr", "hr"]) != acl_partition(["hr"]) > 0
    n = 4
    public = {subshard_of(f"doc{i}.md", n) for i in range(40)}
    assert public == set(range(n))                                             # as before: hash only
    hr = {subshard_of(f"doc{i}.md", n, ["hr"]) for i in range(40)}
    assert len(hr) == n and not hr & public
    assert {s - n * acl_partition(["hr"]) for s in hr} == public                # the same hash split
    assert subshard_of("a.md", 1, ["hr"]) == acl_partition(["hr"])              # an unsplit domain


def _partitioned(tmp_path, rows):
    subs: dict[int, list] = {}
    for r in rows:
        subs.setdefault(subshard_of(r["chunk_id"], 1, r["acl"]), []).append(r)
    infos = [build_shard(str(tmp_path), "d", rs, sub) for sub, rs in sorted(subs.items())]
    return MultiShardSearcher([os.path.join(str(tmp_path), i.folder) for i in infos], [i.acl for i in infos]), infos


def test_rows_a_caller_cannot_read_change_none_of_its_scores(tmp_path):
    """An outsider's BM25 scores over public rows are exactly those of an index without the
    restricted rows (their document frequencies and lengths are in other sub-shards)."""
    restricted = [_row("c5", "Camera vault", "Camera prototypes and camera salary notes.", ["HR", "Camera vault"],
                       acl=["hr"])]
    with_hidden, infos = _partitioned(tmp_path / "a", ROWS + restricted)
    assert sorted(i.acl for i in infos) == [(), ("hr",)]
    without, _ = _partitioned(tmp_path / "b", [r for r in ROWS if not r["acl"]])
    for query in ("camera", "take pictures with the camera", "salary"):
        assert with_hidden.search(query, 10, PUBLIC) == without.search(query, 10, PUBLIC), query
    hr = SearchScope(groups=("hr",))
    assert {c for c, _ in with_hidden.search("camera salary", 10, hr)} == {"c1", "c2", "c4", "c5"}
    # one shard holding both (schema 2) lets the hidden rows move the outsider's scores
    root = str(tmp_path / "m")
    mixed = ShardSearcher(os.path.join(root, build_shard(root, "d", ROWS + restricted).folder))
    assert dict(mixed.search("camera", 10, PUBLIC)) != dict(without.search("camera", 10, PUBLIC))


def test_rows_of_two_acl_sets_in_one_partition_are_refused(tmp_path, monkeypatch):
    from vdgr_core.store import tantivy_shard

    monkeypatch.setattr(tantivy_shard, "acl_partition", lambda acl: 7 if acl else 0)
    rows = [_row("a", "A", "x", ["A"], acl=["hr"]), _row("b", "B", "y", ["B"], acl=["legal"])]
    with pytest.raises(ValueError, match="share the BM25 partition"):
        build_shard(str(tmp_path), "d", rows, 7)
