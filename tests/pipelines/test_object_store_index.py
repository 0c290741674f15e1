"""An index at an object-store URI: built, queried, updated and committed without renames.

``file://`` URIs take the object-store code path (pyarrow.fs objects, shards uploaded whole
before the manifest, a local shard cache for readers) on the local disk, so this runs offline;
``gs://`` and ``s3://`` use the same code with pyarrow's and LanceDB's cloud filesystems.
"""
from __future__ import annotations

import os

import pytest

from pipelines.run_build import run_build
from pipelines.run_update import run_update
from schemas import tables as T
from schemas.config import BuildConfig, EmbeddingConfig, QueryConfig
from schemas.errors import ConfigError
from tests.support.corpus import write_corpus
from vdgr_core.store.gc import collect_garbage
from vdgr_core.store.reader import IndexReader
from vdgr_core.store.writer import table_digest

FILES = {
    "net/_meta.yaml": "description: Routers\n",
    "net/routers/a.md": "# Orbit X2\n\n## Reset\n\nHold RESET for 10 seconds; SKU-90214-B restarts.\n",
    "hr/d.md": "# Leave\n\n## Sick leave\n\nEmployees report sick leave to HR within one day.\n",
}


QUERY = QueryConfig(embedding=EmbeddingConfig(kind="hashing"))


def _cfg(corpus, index):
    return BuildConfig(corpus=corpus, index=index, embedding=EmbeddingConfig(kind="hashing"))


def _digests(index):
    r = IndexReader(index)
    return {n: table_digest(n, r.arrow(n)) for n in T.TABLES}, r.manifest.build_id


def test_build_query_and_update_an_index_at_a_uri(tmp_path, monkeypatch):
    monkeypatch.setenv("VDGR_SHARD_CACHE", str(tmp_path / "shard-cache"))
    corpus = write_corpus(str(tmp_path / "corpus"), FILES)
    uri = "file://" + str(tmp_path / "bucket" / "index")
    run_build(_cfg(corpus, uri))
    local = str(tmp_path / "local")
    run_build(_cfg(corpus, local))
    from_uri = str(tmp_path / "from-uri")
    run_build(_cfg("file://" + corpus, from_uri))       # the corpus listed through pyarrow.fs
    assert _digests(from_uri) == _digests(local)
    assert _digests(uri) == _digests(local)           # the same index, wherever it lives
    assert not list((tmp_path / "bucket" / "index").rglob(".tmp-*"))

    from vdgr_core.query import KnowledgeBase

    res = KnowledgeBase.open(uri, QUERY).query("How long do I hold RESET on the Orbit X2?")
    assert "10 seconds" in res.evidence[0].text
    assert os.listdir(tmp_path / "shard-cache")      # shards were copied to the local cache

    with open(os.path.join(corpus, "hr", "d.md"), "a", encoding="utf-8") as f:
        f.write("\n## Parental leave\n\nParental leave lasts sixteen weeks.\n")
    report = run_update(_cfg(corpus, uri))
    assert report.plan.changed == ("hr/d.md",)
    run_build(_cfg(corpus, str(tmp_path / "fresh")))
    assert _digests(uri) == _digests(str(tmp_path / "fresh"))
    res = KnowledgeBase.open(uri, QUERY).query("How long is parental leave?")
    assert "sixteen weeks" in res.evidence[0].text


def test_gc_refuses_an_object_store_index(tmp_path):
    with pytest.raises(ConfigError, match="object-store URI"):
        collect_garbage("file://" + str(tmp_path / "x"))
