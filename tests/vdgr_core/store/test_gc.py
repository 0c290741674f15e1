"""Garbage collection keeps what the manifest names and removes the rest."""
from __future__ import annotations

import datetime as dt
import os

from pipelines.run_build import run_build
from pipelines.run_update import run_update
from schemas import tables as T
from schemas.config import BuildConfig, EmbeddingConfig
from tests.support.corpus import write_corpus
from vdgr_core.store.filters import SearchScope
from vdgr_core.store.gc import collect_garbage
from vdgr_core.store.reader import IndexReader
from vdgr_core.store.domain_layout import DomainLayout
from vdgr_core.store.vector_blocks import blocks_named


def test_gc_removes_old_versions_and_shards_but_not_the_live_index(tmp_path):
    corpus, index = write_corpus(str(tmp_path / "c")), str(tmp_path / "i")
    cfg = BuildConfig(corpus=corpus, index=index, embedding=EmbeddingConfig(kind="hashing"))
    run_build(cfg)
    old = IndexReader(index).manifest
    old_shard, old_graph = old.tantivy_shards["net"][0].folder, old.layouts["net"].folder
    with open(os.path.join(corpus, "net", "extra.md"), "w", encoding="utf-8") as f:
        f.write("# Extra\n\nA new page about the Orbit X2 antenna.\n")
    run_update(cfg)
    os.makedirs(os.path.join(index, "_staging", "crashed-run"))
    journal = os.path.join(index, "_staging", "embedding-journal-99999.arrows")      # a killed build's
    with open(journal, "wb") as f:
        f.write(b"\xff")
    reader = IndexReader(index)
    live = reader.manifest
    n_contents = reader.arrow(T.CONTENTS).num_rows
    assert [s.folder for s in live.tantivy_shards["net"]] != [old_shard] and live.layouts["net"].folder != old_graph
    report = collect_garbage(index, keep=dt.timedelta(0))
    assert report.shard_folders_removed == 2 and report.staging_runs_removed == 2   # BM25 + layout
    assert not os.path.exists(journal)
    # the old layout's vector blocks the new one does not name (the domain's one block of each kind)
    named = {os.path.normpath(os.path.join(index, rel)) for rel in blocks_named(
        [DomainLayout(os.path.join(index, ref.folder)).meta for ref in live.layouts.values()])}
    on_disk = {os.path.normpath(os.path.join(index, "vectors", d, f))
               for d in os.listdir(os.path.join(index, "vectors")) for f in os.listdir(os.path.join(index, "vectors", d))}
    assert report.vector_blocks_removed == 2 and on_disk == named
    assert report.lance_versions_removed > 0
    assert not os.path.exists(os.path.join(index, old_shard))
    assert not os.path.exists(os.path.join(index, old_graph))
    assert os.path.isdir(os.path.join(index, live.layouts["net"].folder))
    again = IndexReader(index)
    assert again.manifest.build_id == live.build_id
    assert again.arrow(T.CONTENTS).num_rows == n_contents
    assert again.shard("net").search("antenna", 5, SearchScope())
    untouched = collect_garbage(index, keep=dt.timedelta(hours=1))
    assert untouched.shard_folders_removed == 0 and untouched.lance_versions_removed == 0


def test_gc_after_many_appends_keeps_the_manifest_readable(tmp_path):
    import dataclasses

    from vdgr_core.store.lance_store import connect
    from vdgr_core.store.manifest import read_manifest, write_manifest

    corpus, index = write_corpus(str(tmp_path / "c")), str(tmp_path / "i")
    cfg = BuildConfig(corpus=corpus, index=index, embedding=EmbeddingConfig(kind="hashing"))
    run_build(cfg)
    table = connect(index).open_table(T.EDGES)
    rows = table.to_arrow()
    for i in range(3):  # several fragments, so that optimize compacts and commits a version
        table.add(rows.slice(i, 1), mode="append")
    table.add(rows, mode="overwrite")
    m = read_manifest(index)
    write_manifest(index, dataclasses.replace(m, table_versions={**m.table_versions, T.EDGES: table.version}))
    collect_garbage(index, keep=dt.timedelta(0))
    assert IndexReader(index).arrow(T.EDGES).num_rows == rows.num_rows


def test_gc_never_replaces_a_newer_manifest(tmp_path, monkeypatch):
    """If the manifest moved on after gc read it (a writer that bypassed the lock), gc's compacted
    manifest is refused and the newer one stays."""
    import dataclasses

    import pytest

    from schemas.errors import ConcurrentCommitError
    from vdgr_core.store import gc as gc_mod
    from vdgr_core.store.lance_store import connect
    from vdgr_core.store.manifest import read_manifest, write_manifest

    corpus, index = write_corpus(str(tmp_path / "c")), str(tmp_path / "i")
    run_build(BuildConfig(corpus=corpus, index=index, embedding=EmbeddingConfig(kind="hashing")))
    table = connect(index).open_table(T.EDGES)
    rows = table.to_arrow()
    third = rows.num_rows // 3 + 1   # the same rows in three fragments: optimize compacts them
    table.add(rows.slice(0, third), mode="overwrite")
    table.add(rows.slice(third, third), mode="append")
    table.add(rows.slice(2 * third), mode="append")
    m = read_manifest(index)
    seen_by_gc = write_manifest(index, dataclasses.replace(
        m, table_versions={**m.table_versions, T.EDGES: table.version}))
    newer = write_manifest(index, dataclasses.replace(seen_by_gc, build_id="newer"))
    monkeypatch.setattr(gc_mod, "read_manifest", lambda _: seen_by_gc)
    with pytest.raises(ConcurrentCommitError):
        collect_garbage(index, keep=dt.timedelta(0))
    assert read_manifest(index) == newer
