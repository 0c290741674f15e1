"""Query layouts: what each domain's memory-mapped folder holds equals what its rows say."""
import os
from collections import defaultdict

import numpy as np
import pytest

from pipelines.run_build import run_build
from schemas import tables as T
from schemas.config import BuildConfig, EmbeddingConfig
from tests.support.corpus import write_corpus
from tests.support.labels import label_stems
from vdgr_core.labels import label_key
from vdgr_core.store.domain_layout import FORMAT, STORE_FILES, DomainLayout
from vdgr_core.store.location import COMPLETE_MARKER
from vdgr_core.store.reader import IndexReader


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    root = tmp_path_factory.mktemp("layout")
    corpus = write_corpus(str(root / "corpus"))
    run_build(BuildConfig(corpus=corpus, index=str(root / "index"), embedding=EmbeddingConfig(kind="hashing")))
    return str(root / "index")


def _rows(reader, table, domain):
    return [r for r in reader.arrow(table).to_pylist() if r["domain"] == domain]


def _layouts(index):
    reader = IndexReader(index)
    return reader, {d: DomainLayout(reader.layout_folder(d)) for d in reader.manifest.layouts}


def test_every_domain_has_a_complete_memory_mapped_layout(index):
    reader, layouts = _layouts(index)
    assert set(layouts) == {"hr", "net", "specs"}
    for d, lay in layouts.items():
        ref = reader.manifest.layouts[d]
        files = set(os.listdir(lay.folder)) - {COMPLETE_MARKER}
        assert set(STORE_FILES) <= files and "meta.json" in files
        ids = lay.array("content_ids")
        assert isinstance(ids.base, np.memmap) and not ids.flags.owndata and not ids.flags.writeable
        assert (lay.nc, lay.nd, lay.ne) == (ref.contents, ref.directories, ref.entities)
        assert lay.nc == len(_rows(reader, T.CONTENTS, d)) and lay.nd == len(_rows(reader, T.DIRECTORIES, d))
        assert lay.graph.indices.dtype == lay.graph.indptr.dtype    # scipy keeps the maps, no copy


def test_contents_sections_and_document_store_match_the_rows(index):
    reader, layouts = _layouts(index)
    for d, lay in layouts.items():
        rows = sorted(_rows(reader, T.CONTENTS, d), key=lambda r: r["chunk_id"])
        ids = [bytes(x).decode() for x in lay.array("content_ids")]
        assert ids == [r["chunk_id"] for r in rows]
        store = lay.store("contents").to_pylist()
        for r, s in zip(rows, store):
            assert (s["text"], s["title"], s["source"], s["path"]) == (r["text"], r["title"], r["source"], r["path"])
        # a section = (source, parent node); its members in reading order; each content in one
        ptr, members = lay.array("section_ptr"), lay.array("section_rows")
        assert sorted(members.tolist()) == list(range(lay.nc))
        for s in range(lay.ns):
            part = [rows[i] for i in members[ptr[s]:ptr[s + 1]]]
            assert len({(p["source"], p["parent_id"]) for p in part}) == 1
            assert [p["position"] for p in part] == sorted(p["position"] for p in part)
            assert all(lay.array("content_section")[i] == s for i in members[ptr[s]:ptr[s + 1]])


def test_directory_tree_and_what_lies_below_match_the_rows(index):
    reader, layouts = _layouts(index)
    for d, lay in layouts.items():
        dirs = sorted(_rows(reader, T.DIRECTORIES, d), key=lambda r: r["node_id"])
        local = {r["node_id"]: j for j, r in enumerate(dirs)}
        parent = lay.array("dir_parent")
        assert [local.get(r["parent_id"], -1) for r in dirs] == parent.tolist()
        ptr, kids = lay.csr("dir_children")
        for j in range(lay.nd):
            assert kids[ptr[j]:ptr[j + 1]].tolist() == [i for i in range(lay.nd) if parent[i] == j]
        contents = sorted(_rows(reader, T.CONTENTS, d), key=lambda r: r["chunk_id"])
        classes = [tuple(c) for c in lay.meta["acl_classes"]]
        below = defaultdict(set)
        for r in contents:
            j = local.get(r["parent_id"])
            while j is not None and j >= 0:
                below[j].add(classes.index(tuple(sorted(r["acl"] or ()))))
                j = int(parent[j]) if parent[j] >= 0 else None
        ptr, cls = lay.csr("dir_below")
        assert [set(cls[ptr[j]:ptr[j + 1]].tolist()) for j in range(lay.nd)] == [below[j] for j in range(lay.nd)]
        # the restricted folder is known to hold only netops contents
        if d == "net":
            assert ("netops",) in classes


def test_labels_are_the_stems_of_each_directory_label(index):
    reader, layouts = _layouts(index)
    for d, lay in layouts.items():
        dirs = sorted(_rows(reader, T.DIRECTORIES, d), key=lambda r: r["node_id"])
        keys, ptr = lay.array("label_keys"), lay.array("label_ptr")
        got = defaultdict(dict)
        for t, key in enumerate(keys):
            for j, tf in zip(lay.array("label_dirs")[ptr[t]:ptr[t + 1]], lay.array("label_tf")[ptr[t]:ptr[t + 1]]):
                got[int(j)][int(key)] = float(tf)
        for j, r in enumerate(dirs):
            stems = label_stems(r["full_path"], r["summary"])
            want = defaultdict(float)
            for s in stems:
                want[label_key(s)] += 1.0
            assert got[j] == dict(want)
            assert lay.array("label_len")[j] == len(stems)


def test_graph_holds_every_entity_edge_of_the_domain_both_ways(index):
    reader, layouts = _layouts(index)
    for d, lay in layouts.items():
        cids = [bytes(x).decode() for x in lay.array("content_ids")]
        eids = [bytes(x).decode() for x in lay.array("entity_ids")]
        node = {i: n for n, i in enumerate(cids + eids)}
        want = np.zeros((lay.nc + lay.ne, lay.nc + lay.ne))
        for e in _rows(reader, T.EDGES, d):
            if e["kind"] in (T.HAS_ENTITY, T.COOCCURS) and e["src"] in node and e["dst"] in node:
                a, b = node[e["src"]], node[e["dst"]]
                if a != b:
                    w = e["weight"] or 1.0
                    want[a, b] += w
                    want[b, a] += w
        got = lay.graph.toarray()
        np.testing.assert_allclose(got, want, rtol=1e-6)
        assert got.sum() > 0 and (got == got.T).all()


def test_layout_folders_are_named_by_their_content(index, tmp_path):
    reader = IndexReader(index)
    again = str(tmp_path / "again")
    run_build(BuildConfig(corpus=os.path.join(os.path.dirname(index), "corpus"), index=again,
                          embedding=EmbeddingConfig(kind="hashing")))
    assert IndexReader(again).manifest.layouts == reader.manifest.layouts


def test_a_layout_folder_name_is_the_digest_of_the_files_it_holds(index):
    import hashlib

    reader, layouts = _layouts(index)
    for d, lay in layouts.items():
        h = hashlib.sha256(f"layout {FORMAT}\x1f{d}".encode("utf-8"))
        for name in sorted(set(os.listdir(lay.folder)) - {COMPLETE_MARKER}):
            with open(os.path.join(lay.folder, name), "rb") as f:
                data = f.read()
            h.update(name.encode("utf-8") + len(data).to_bytes(8, "little") + data)
        assert os.path.basename(lay.folder) == h.hexdigest()[:24]


def test_an_update_patches_the_previous_layout_and_equals_a_rebuild(tmp_path, monkeypatch):
    from pipelines.run_update import run_update
    from vdgr_core.store import layout_build

    corpus = write_corpus(str(tmp_path / "corpus"))
    live, fresh = str(tmp_path / "live"), str(tmp_path / "fresh")
    cfg = BuildConfig(corpus=corpus, index=live, embedding=EmbeddingConfig(kind="hashing"))
    run_build(cfg)
    hr_before = IndexReader(live).manifest.layouts["hr"]
    with open(os.path.join(corpus, "net", "routers", "v2", "orbit.md"), "a", encoding="utf-8") as f:
        f.write("\n## Antenna\n\nThe SKU-90214-B antenna mount fits the Orbit X2.\n")
    os.remove(os.path.join(corpus, "specs", "radio.txt"))
    with open(os.path.join(corpus, "specs", "power.md"), "w", encoding="utf-8") as f:
        f.write("# Power\n\nThe DL_MIMO_Mode scheduler draws 12 W.\n")

    def no_table_reads(*args, **kwargs):
        raise AssertionError("an update must patch the previous layout, not read the domain's rows")

    monkeypatch.setattr(layout_build, "read_domain_rows", no_table_reads)
    monkeypatch.setattr(layout_build, "read_tables_whole", no_table_reads)
    run_update(cfg)
    monkeypatch.undo()
    run_build(BuildConfig(corpus=corpus, index=fresh, embedding=EmbeddingConfig(kind="hashing")))
    updated, rebuilt = IndexReader(live).manifest, IndexReader(fresh).manifest
    assert updated.layouts == rebuilt.layouts
    assert updated.layouts["hr"] == hr_before                # an untouched domain keeps its folder


def test_layouts_read_from_the_tables_whole_or_filtered_equal_the_workers_layouts(tmp_path, monkeypatch):
    """The build's workers make each layout from its domain's fragments; an update reads a domain
    without a usable layout from the tables, whole when they are small, filtered by domain when
    large: all three give the same folders."""
    from vdgr_core.store import layout_build

    corpus = write_corpus(str(tmp_path / "corpus"))
    index = str(tmp_path / "index")
    run_build(BuildConfig(corpus=corpus, index=index, embedding=EmbeddingConfig(kind="hashing")))
    reader = IndexReader(index)
    built = reader.manifest.layouts
    tables = {n: reader.table(n) for n in ("contents", "directories", "entities", "edges")}
    reads = defaultdict(int)

    def counted(way, name):
        real = getattr(layout_build, name)

        def read(*args, **kwargs):
            reads[(way, name)] += 1
            return real(*args, **kwargs)
        return read

    out = {}
    for way in ("whole", "filtered"):
        for name in ("read_domain_rows", "read_tables_whole"):
            monkeypatch.setattr(layout_build, name, counted(way, name))
        # 3 domains: read whole from 1 domain on, filtered once the tables count as large
        monkeypatch.setattr(layout_build, "WHOLE_READ_MIN_DOMAINS", 1 if way == "whole" else 4)
        monkeypatch.setattr(layout_build, "WHOLE_READ_BYTES", 1 << 30 if way == "whole" else 0)
        out[way] = layout_build.write_layouts(tables, str(tmp_path / way), sorted(built))
        monkeypatch.undo()
    assert dict(reads) == {("whole", "read_tables_whole"): 1, ("filtered", "read_domain_rows"): 3}
    assert out["whole"] == out["filtered"] == built and set(built) == {"hr", "net", "specs"}


def test_rows_split_by_domain_keep_every_row_with_a_domain():
    import pyarrow as pa

    from vdgr_core.store.layout_build import _split_by_domain

    rows = pa.table({"id": ["a", "b", "c", "d", "e"], "domain": ["net", None, "hr", "net", "hr"]})
    parts = _split_by_domain(rows)
    assert sorted(parts) == ["hr", "net"]
    assert parts["net"].column_names == ["id"]
    assert sorted(parts["net"].column("id").to_pylist()) == ["a", "d"]
    assert sorted(parts["hr"].column("id").to_pylist()) == ["c", "e"]
    assert _split_by_domain(rows.slice(1, 1)) == {}


def test_layouts_read_the_next_domain_ahead_in_order_and_at_most_one():
    import pytest

    from vdgr_core.store.layout_build import _read_ahead

    read = []

    def reader(domain):
        read.append(domain)
        return domain.upper()

    got = []
    for domain, value in _read_ahead(["a", "b", "c", "d"], reader):
        got.append((domain, value))
        assert len(read) <= len(got) + 1          # never more than one domain ahead
    assert got == [("a", "A"), ("b", "B"), ("c", "C"), ("d", "D")] and read == ["a", "b", "c", "d"]
    assert list(_read_ahead([], reader)) == []

    def failing(domain):
        if domain == "b":
            raise OSError("cannot read b")
        return domain

    seen = []
    with pytest.raises(OSError, match="cannot read b"):
        for domain, _ in _read_ahead(["a", "b", "c"], failing):
            seen.append(domain)
    assert seen == ["a"]
