"""A row-level update rewrites only the rows its documents touch, and still equals a rebuild."""
from __future__ import annotations

import os
import time

import numpy as np

from pipelines.run_build import run_build
from pipelines.run_update import run_update
from pipelines.update_plan import current_fingerprints
from schemas import tables as T
from schemas.config import BuildConfig, EmbeddingConfig, StoreConfig
from tests.support.update_ops import snapshot
from tests.support.corpus import write_corpus
from tests.support.layouts import strip_layout_vectors
from vdgr_core.corpus import scan_corpus
from vdgr_core.store import domain_layout
from vdgr_core.store.domain_layout import FORMAT as LAYOUT_FORMAT
from vdgr_core.store.domain_layout import DomainLayout, layout_format
from vdgr_core.store.file_stats import FileStatsCache
from vdgr_core.store.filters import SearchScope
from vdgr_core.store.reader import IndexReader
from vdgr_core.store.vector_blocks import BlockedVectors

TOPICS = ["router firmware", "antenna band", "uplink port", "battery charger", "screen brightness",
          "camera mode", "signal strength", "network switch"]


def _files(n_docs: int) -> dict[str, str]:
    out = {"net/_meta.yaml": "description: Network products\n"}
    for i in range(n_docs):
        folder = f"net/v{i % 3}"
        out[f"{folder}/_meta.yaml"] = f"version: '{i % 3}'\n"
        a, b = TOPICS[i % len(TOPICS)], TOPICS[(i * 3 + 1) % len(TOPICS)]
        out[f"{folder}/doc{i:02d}.md"] = (
            f"# Guide {i}\n\n## Setup\n\nThe SKU-{1000 + i} {a} uses DL_MIMO_Mode with the {b}.\n\n"
            f"## Care\n\nClean the {b} of the SKU-{1000 + i} every {i + 2} days.\n")
    return out


def _cfg(corpus, index, **store):
    return BuildConfig(corpus=corpus, index=index, embedding=EmbeddingConfig(kind="hashing"),
                       store=StoreConfig(**store))


def _age(root: str) -> None:
    """Files written an hour ago: the size + mtime check trusts them (not racy)."""
    old = time.time() - 3600
    for folder, _, files in os.walk(root):
        for f in files:
            os.utime(os.path.join(folder, f), (old, old))


def test_update_deletes_and_adds_only_the_rows_of_the_changed_document(tmp_path):
    corpus, index = write_corpus(str(tmp_path / "c"), _files(24)), str(tmp_path / "i")
    _age(corpus)
    run_build(_cfg(corpus, index))
    before = IndexReader(index).manifest
    with open(os.path.join(corpus, "net/v1/doc07.md"), "a", encoding="utf-8") as f:
        f.write("\n## Warranty\n\nThe warranty of the SKU-1007 covers the router firmware.\n")
    report = run_update(_cfg(corpus, index))
    w = report.build.update_writes
    after = IndexReader(index)
    doc_chunks = [r for r in after.arrow(T.CONTENTS).to_pylist() if r["source"] == "net/v1/doc07.md"]
    assert w.deleted[T.CONTENTS] == 2 and w.added[T.CONTENTS] == len(doc_chunks) == 3
    assert (w.deleted[T.DOCUMENTS], w.added[T.DOCUMENTS]) == (1, 1)
    assert before.counts[T.CONTENTS] == 48 and after.manifest.counts[T.CONTENTS] == 49
    # edges: the document's own (containment, existence), its pairs and its new section
    assert w.deleted[T.EDGES] < before.counts[T.EDGES] / 5
    # directories: the document, its sections, and its ancestors (folder v1, domain)
    assert w.deleted[T.DIRECTORIES] <= 6 and w.added[T.DIRECTORIES] <= 7
    # entities: the domain's chunk count changed, so every entity's importance; the statistics
    # rows of the entities the document mentions only
    assert w.deleted[T.ENTITY_STATS] < before.counts[T.ENTITY_STATS] / 2
    # the LanceDB table versions hold the change, not a rewrite
    table = after.table(T.CONTENTS)
    assert table.count_rows() == 49
    assert after.shard("net").search("warranty", 5, SearchScope())


def test_update_writes_and_reads_only_the_vector_blocks_of_the_changed_document(tmp_path, monkeypatch):
    corpus, index = write_corpus(str(tmp_path / "c"), _files(64)), str(tmp_path / "i")
    _age(corpus)
    run_build(_cfg(corpus, index))

    def blocks() -> set[str]:
        return set(os.listdir(os.path.join(index, "vectors", "net")))

    before = blocks()
    meta = DomainLayout(IndexReader(index).layout_folder("net")).meta["vector_blocks"]
    assert {k: len(v["blocks"]) for k, v in meta.items()} == {"content": 4, "dir": 8}   # 64 documents; folders too
    opened = []
    real = BlockedVectors.block
    monkeypatch.setattr(BlockedVectors, "block", lambda self, b: opened.append(self.names[b]) or real(self, b))
    with open(os.path.join(corpus, "net/v1/doc07.md"), "a", encoding="utf-8") as f:
        f.write("\n## Warranty\n\nThe warranty of the SKU-1007 covers the router firmware.\n")
    run_update(_cfg(corpus, index))
    new = blocks() - before
    # read and written again: the document's content block, its directory block, and the block
    # of the folders above it (summarized again: when a summary comes out the same, that block's
    # bytes and name do too, and no file is new); each read once, the others not at all
    assert len(opened) == len(set(opened)) <= 3 and 2 <= len(new) <= len(opened)
    lay = DomainLayout(IndexReader(index).layout_folder("net"))
    named = {n + ".npy" for spec in lay.meta["vector_blocks"].values() for n in spec["blocks"] if n}
    assert new <= named and len(named - new) >= 9
    fresh = str(tmp_path / "fresh")
    run_build(_cfg(corpus, fresh))
    assert IndexReader(fresh).manifest.layouts == IndexReader(index).manifest.layouts


def test_update_of_subshards_and_vector_indexes_equals_a_rebuild(tmp_path):
    files = _files(24)
    corpus = write_corpus(str(tmp_path / "c"), files)
    live, fresh = str(tmp_path / "live"), str(tmp_path / "fresh")
    store = dict(bm25_subshard_max_documents=7, vector_index_min_rows=10, vector_rows_per_partition=64,
                 scalar_index_min_rows=10)
    run_build(_cfg(corpus, live, **store))
    m = IndexReader(live).manifest
    assert m.subshards == {"net": 4} and len(m.tantivy_shards["net"]) == 4
    assert set(m.vector_indexes) == {T.CONTENTS, T.DIRECTORIES, T.ENTITIES}
    os.remove(os.path.join(corpus, "net/v0/doc03.md"))
    with open(os.path.join(corpus, "net/v2/doc05.md"), "a", encoding="utf-8") as f:
        f.write("\n## Warranty\n\nThe warranty of the SKU-1005 covers the uplink port.\n")
    report = run_update(_cfg(corpus, live, **store))
    assert set(report.plan.changed) == {"net/v2/doc05.md"} and report.plan.deleted == ("net/v0/doc03.md",)
    run_build(_cfg(corpus, fresh, **store))
    assert snapshot(live) == snapshot(fresh)
    reader = IndexReader(live)
    hits = reader.shard("net").search("warranty uplink", 5, SearchScope())
    assert hits and hits[0][0] in {r["chunk_id"] for r in reader.arrow(T.CONTENTS).to_pylist()
                                   if r["source"] == "net/v2/doc05.md"}
    vec = np.asarray(reader.arrow(T.CONTENTS).column("vector")[0].as_py(), np.float32)
    assert reader.dense_search(T.CONTENTS, vec, 3, SearchScope()).num_rows == 3
    # a sub-shard count change (more documents) re-lays the domain out and still equals a rebuild
    more = {k.replace("doc", "new"): v for k, v in _files(24).items() if k.endswith(".md")}
    write_corpus(corpus, more)
    run_update(_cfg(corpus, live, **store))
    run_build(_cfg(corpus, str(tmp_path / "fresh2"), **store))
    assert IndexReader(live).manifest.subshards == {"net": 8}
    assert snapshot(live) == snapshot(str(tmp_path / "fresh2"))


def test_unchanged_files_are_not_read_again(tmp_path, monkeypatch):
    import pipelines.update_plan as up

    corpus, index = write_corpus(str(tmp_path / "c"), _files(10)), str(tmp_path / "i")
    _age(corpus)
    run_build(_cfg(corpus, index))
    with open(os.path.join(corpus, "net/v1/doc04.md"), "a", encoding="utf-8") as f:
        f.write("\nOne more line.\n")
    read = []
    real = up.read_bytes_limited
    monkeypatch.setattr(up, "read_bytes_limited", lambda open_fn, path, n: read.append(path) or real(open_fn, path, n))
    scan = scan_corpus(corpus)
    cfg = _cfg(corpus, index)
    with_cache = current_fingerprints(scan, cfg.limits, FileStatsCache(index))
    assert [p.rsplit("/", 1)[-1] for p in read] == ["doc04.md"]       # size and mtime changed
    read.clear()
    assert current_fingerprints(scan, cfg.limits) == with_cache                 # the same without the cache
    assert len(read) == 10


def test_update_rewrites_layouts_of_an_older_format_from_the_tables(tmp_path, monkeypatch):
    files = {**_files(6), "hr/_meta.yaml": "description: People\n",
             "hr/leave.md": "# Leave\n\n## Annual\n\nStaff get 25 days of annual leave.\n"}
    corpus, live, fresh = write_corpus(str(tmp_path / "c"), files), str(tmp_path / "live"), str(tmp_path / "fresh")
    with monkeypatch.context() as m:          # the build of an older version
        m.setattr(domain_layout, "FORMAT", 1)
        run_build(_cfg(corpus, live))
    strip_layout_vectors(live)
    old = IndexReader(live)
    assert all(layout_format(old.layout_folder(d)) == 1 for d in old.manifest.layouts)
    with open(os.path.join(corpus, "net/v1/doc01.md"), "a", encoding="utf-8") as f:
        f.write("\n## Warranty\n\nThe warranty of the SKU-1001 covers the antenna band.\n")
    run_update(_cfg(corpus, live))
    run_build(_cfg(corpus, fresh))
    after = IndexReader(live)
    # hr did not change, and its layout is still written again: equal to a rebuild's
    assert set(after.manifest.layouts) == {"hr", "net"}
    assert after.manifest.layouts == IndexReader(fresh).manifest.layouts
    for d in after.manifest.layouts:
        lay = DomainLayout(after.layout_folder(d))
        assert layout_format(lay.folder) == LAYOUT_FORMAT and lay.vectors("content").shape[0] == lay.nc


def test_update_without_a_changed_document_still_writes_layouts_of_an_older_format(tmp_path, monkeypatch):
    corpus, live, fresh = write_corpus(str(tmp_path / "c"), _files(6)), str(tmp_path / "live"), str(tmp_path / "fresh")
    _age(corpus)
    with monkeypatch.context() as m:          # the build of an older version
        m.setattr(domain_layout, "FORMAT", 1)
        run_build(_cfg(corpus, live))
    strip_layout_vectors(live)
    report = run_update(_cfg(corpus, live))
    assert report.plan.empty and report.build is not None
    run_build(_cfg(corpus, fresh))
    after = IndexReader(live)
    assert after.manifest.layouts == IndexReader(fresh).manifest.layouts
    assert all(layout_format(after.layout_folder(d)) == LAYOUT_FORMAT for d in after.manifest.layouts)
    assert run_update(_cfg(corpus, live)).build is None       # nothing left to write


def test_update_rebuilds_bm25_shards_of_an_older_schema(tmp_path, monkeypatch):
    from vdgr_core.store import tantivy_shard

    corpus, live, fresh = write_corpus(str(tmp_path / "c"), _files(6)), str(tmp_path / "live"), str(tmp_path / "fresh")
    _age(corpus)
    with monkeypatch.context() as m:          # the build of an older version: heading + text only
        m.setattr(tantivy_shard, "SCHEMA_VERSION", "2")
        m.setattr(tantivy_shard, "body_text", lambda title, text, path=(): f"{title}\n{text}")
        run_build(_cfg(corpus, live))
    old = IndexReader(live)
    assert [s.schema for s in old.manifest.tantivy_shards["net"]] == ["2"]
    assert old.shard("net").search("setup", 5, SearchScope())                  # a heading word
    assert not old.shard("net").search("guide", 5, SearchScope())              # an ancestor's title: not indexed
    report = run_update(_cfg(corpus, live))
    assert report.plan.empty and report.build is not None      # nothing changed, the shard still rebuilt
    run_build(_cfg(corpus, fresh))
    after = IndexReader(live)
    assert [s.schema for s in after.manifest.tantivy_shards["net"]] == [tantivy_shard.SCHEMA_VERSION]
    assert after.manifest.tantivy_shards == IndexReader(fresh).manifest.tantivy_shards
    assert len(after.shard("net").search("guide", 50, SearchScope())) == after.manifest.counts[T.CONTENTS]
    assert run_update(_cfg(corpus, live)).build is None       # nothing left to write
