"""The bundled example corpus built with the real embedding model, checked table by table,
then queried through vdgr_core (integration: loads all-MiniLM-L6-v2 from the installed package)."""
from __future__ import annotations

import os
from collections import Counter

import pytest

from pipelines.run_build import run_build
from schemas import tables as T
from schemas.config import BuildConfig
from vdgr_core.store.reader import IndexReader

pytestmark = pytest.mark.integration
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(REPO, "examples", "corpus")
BACKDOOR = "networking/internal/orbit-x2-service-backdoor.md"


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("examples") / "index")
    report = run_build(BuildConfig(corpus=CORPUS, index=out))
    assert report.embeddings_computed > 0
    return out


@pytest.fixture(scope="module")
def kb(index):
    from vdgr_core.query import KnowledgeBase

    return KnowledgeBase.open(index)


def test_documents_table(index):
    docs = IndexReader(index).arrow(T.DOCUMENTS).to_pylist()
    assert len(docs) == 10 and all(d["status"] == "indexed" for d in docs)
    by_path = {d["path"]: d for d in docs}
    assert by_path[BACKDOOR]["acl"] == ["netops"]
    assert {d["version"] for d in docs if "/orbit-x2-v1/" in d["path"]} == {"1.0"}
    assert {d["domain"] for d in docs} == {"networking", "hr", "specs"}
    assert IndexReader(index).arrow(T.DEAD_LETTERS).num_rows == 0


def test_directories_table(index):
    dirs = IndexReader(index).arrow(T.DIRECTORIES).to_pylist()
    resets = [d for d in dirs if d["title"] == "Factory reset" and "Orbit X2 User Manual" in d["full_path"]]
    assert sorted(d["version"] for d in resets) == ["1.0", "2.0"]
    kinds = Counter(d["kind"] for d in dirs)
    assert kinds["domain"] == 3 and kinds["document"] == 10 and kinds["section"] > 20
    assert all(d["summary"] for d in dirs)
    assert all(len(d["vector"]) == 384 for d in dirs)


def test_contents_table(index):
    contents = IndexReader(index).arrow(T.CONTENTS).to_pylist()
    assert all(c["text"] and c["summary"] and c["path"][0] == c["domain"] for c in contents)
    backdoor = [c for c in contents if c["source"] == BACKDOOR]
    assert backdoor and all(not c["public"] and c["acl"] == ["netops"] for c in backdoor)
    safety = [c for c in contents if "use only the power adapter supplied" in c["text"]]
    assert len({c["source"] for c in safety}) == 2 and len({c["chunk_id"] for c in safety}) == len(safety)


def test_entities_and_edges(index):
    r = IndexReader(index)
    wpa3 = [e for e in r.arrow(T.ENTITIES).to_pylist() if e["norm"] == "wpa3"]
    assert Counter(e["domain"] for e in wpa3) == Counter({"networking": 1, "specs": 1})
    net = next(e for e in wpa3 if e["domain"] == "networking")
    assert net["doc_frequency"] == 2 and net["chunk_frequency"] == 2   # merged over two documents
    edges = Counter(e["kind"] for e in r.arrow(T.EDGES).to_pylist())
    assert edges[T.CONTAINS] > 0 and edges[T.HAS_ENTITY] > 0 and edges[T.COOCCURS] > 0
    assert set(r.manifest.tantivy_shards) == {"networking", "hr", "specs"}


def test_query_finds_the_versioned_section(kb):
    res = kb.query("How do I reset the Orbit X2 router to factory settings?", version="2.0")
    assert res.evidence[0].path[-1] == "Factory reset" and res.evidence[0].version == "2.0"
    assert "[1]" in res.answer


def test_restricted_document_only_for_its_group(kb):
    title = "Orbit X2 service backdoor procedure"
    hidden = kb.query(title)
    assert all(e.source != BACKDOOR for e in hidden.evidence)
    shown = kb.query(title, groups=("netops",))
    assert shown.evidence[0].source == BACKDOOR


def test_cli_update_embeds_the_new_text_in_a_child_process_like_in_process(index, tmp_path, capsys):
    """`vdgr update` loads the model in a child process (started before it scans): the new
    chunk's vector is the one the in-process model computes, and the text is searchable."""
    import shutil

    import numpy as np

    from runners.cli import main
    from schemas.config import EmbeddingConfig
    from vdgr_core.embedding import make_embedder
    from vdgr_core.indexing.rows import content_embedding_text
    from vdgr_core.query import KnowledgeBase

    corpus, live = str(tmp_path / "corpus"), str(tmp_path / "index")
    shutil.copytree(CORPUS, corpus)
    shutil.copytree(index, live)
    doc = os.path.join(corpus, "networking", "routers", "orbit-x2-v2", "orbit-x2-user-manual.md")
    sentence = "Quarantine mode isolates the Zephyr-7 gateway from every uplink."
    with open(doc, "a", encoding="utf-8") as f:
        f.write(f"\n\n## Quarantine mode\n\n{sentence}\n")
    assert main(["update", corpus, "--index", live, "-q"]) == 0
    out = capsys.readouterr().out
    assert "1 changed" in out and "embeddings" in out
    rows = [r for r in IndexReader(live).arrow(T.CONTENTS).to_pylist() if sentence in r["text"]]
    assert len(rows) == 1
    expected = make_embedder(EmbeddingConfig()).embed([content_embedding_text(rows[0]["path"], rows[0]["text"])])[0]
    # the same model and settings: a text's vector does not depend on the batch it was in
    np.testing.assert_array_equal(np.asarray(rows[0]["vector"], dtype=np.float32), expected)
    res = KnowledgeBase.open(live).query("What isolates the Zephyr-7 gateway from every uplink?")
    assert sentence in res.evidence[0].text
    # update == rebuild bit for bit with the real model: a fresh build (no embedding cache, the
    # texts embedded in large batches) gives the same tables and build id as the update
    from pipelines.run_build import run_build
    from schemas.config import BuildConfig
    from vdgr_core.store.writer import table_digest

    rebuilt = str(tmp_path / "rebuilt")
    run_build(BuildConfig(corpus=corpus, index=rebuilt, embedding=EmbeddingConfig()))
    a, b = IndexReader(live), IndexReader(rebuilt)
    for name in (T.CONTENTS, T.DIRECTORIES, T.ENTITIES):
        assert table_digest(name, a.arrow(name)) == table_digest(name, b.arrow(name)), name
    assert a.manifest.build_id == b.manifest.build_id
