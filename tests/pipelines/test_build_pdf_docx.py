"""A corpus mixing Markdown, PDF and DOCX through the real Beam build, then queried.

Bad PDFs and DOCX files become typed dead letters without stopping the build; PDF chunks carry
their page to the contents table and to the query's evidence; an index written before the
``page`` column existed is still read and updated.
"""
from __future__ import annotations

import dataclasses

import os
import shutil

import pytest

from pipelines.run_build import run_build
from pipelines.run_update import run_update
from schemas import tables as T
from schemas.config import BuildConfig, EmbeddingConfig, QueryConfig
from schemas.errors import IndexError_
from tests.support import documents as D
from tests.support.corpus import write_corpus
from vdgr_core.query.knowledge_base import KnowledgeBase
from vdgr_core.store.reader import IndexReader
from vdgr_core.store.lance_store import connect
from vdgr_core.store.manifest import write_manifest
from vdgr_core.store.writer import table_digest

HASHING = EmbeddingConfig(kind="hashing")


def _files() -> dict[str, str | bytes]:
    service, _ = D.pdf_multi_page(60)
    return {
        "net/routers/guide.md": "# Orbit X2 Guide\n\n## Wi-Fi\n\nThe Orbit X2 broadcasts on two bands.\n",
        "net/routers/manual.pdf": D.pdf_with_outline(),
        "net/routers/service.pdf": service,
        "net/routers/handbook.docx": D.docx_manual(),
        "net/routers/locked.pdf": D.pdf_encrypted("secret"),
        "net/routers/broken.pdf": b"%PDF-1.7\n" + bytes(range(256)) * 8,
        "net/routers/scan.pdf": D.pdf_image_only(),
        "net/routers/broken.docx": b"PK\x03\x04 not a package",
    }


def _config(corpus: str, index: str) -> BuildConfig:
    return BuildConfig(corpus=corpus, index=index, embedding=HASHING)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("pdf_docx")
    corpus = write_corpus(str(root / "corpus"), _files())
    index = str(root / "index")
    report = run_build(_config(corpus, index))
    return corpus, index, report


def test_bad_pdf_and_docx_are_typed_dead_letters_and_the_build_goes_on(built):
    _, index, report = built
    reader = IndexReader(index)
    dead = {r["path"]: r["reason"] for r in reader.arrow(T.DEAD_LETTERS).to_pylist()}
    assert dead == {
        "net/routers/locked.pdf": "encrypted",
        "net/routers/broken.pdf": "corrupt",
        "net/routers/scan.pdf": "no_text_layer",
        "net/routers/broken.docx": "corrupt",
    }
    assert report.dead_letters == 4
    status = {r["path"]: r["status"] for r in reader.arrow(T.DOCUMENTS).to_pylist()}
    assert [p for p, s in sorted(status.items()) if s == "indexed"] == [
        "net/routers/guide.md", "net/routers/handbook.docx", "net/routers/manual.pdf", "net/routers/service.pdf"]


def test_toc_of_pdf_and_docx_become_directory_nodes(built):
    _, index, _ = built
    paths = {tuple(d["full_path"]) for d in IndexReader(index).arrow(T.DIRECTORIES).to_pylist()}
    assert ("net", "routers", "Orbit X2 Manual", "Factory reset", "LED codes") in paths
    assert ("net", "routers", "Orbit X2 Handbook", "Setup", "Specifications", "Antennas") in paths


def test_pages_reach_the_contents_table(built):
    _, index, _ = built
    contents = IndexReader(index).arrow(T.CONTENTS)
    assert contents.schema.field("page").type == "int32"
    pages: dict[str, set] = {}
    for row in contents.select(["source", "page", "text"]).to_pylist():
        pages.setdefault(row["source"], set()).add(row["page"])
    assert pages["net/routers/guide.md"] == {None} and pages["net/routers/handbook.docx"] == {None}
    assert pages["net/routers/manual.pdf"] == {1, 2}
    assert {1, 2} <= pages["net/routers/service.pdf"]
    specs = [r["text"] for r in contents.to_pylist() if r["source"].endswith(".docx")]
    assert any("5 GHz | 5150-5850 MHz" in t for t in specs)


def test_query_evidence_carries_the_pdf_page(built):
    _, index, _ = built
    kb = KnowledgeBase.open(index, QueryConfig(embedding=HASHING))
    result = kb.query("How long do I hold RESET until the LED blinks amber?", k=5)
    top = result.evidence[0]
    assert (top.source, top.page) == ("net/routers/manual.pdf", 2)
    assert "Hold RESET" in top.text
    md = kb.query("Which bands does the Orbit X2 broadcast on?", k=5).evidence
    assert any(e.source == "net/routers/guide.md" and e.page is None for e in md)


def _as_index_without_page(src: str, dst: str) -> None:
    """Commit a copy of ``src`` as an older version wrote it: its contents table lacks the
    ``page`` column and its manifest names no query layouts."""
    shutil.copytree(src, dst)
    m = IndexReader(dst).manifest
    table = connect(dst).open_table(T.CONTENTS)
    table.drop_columns(["page"])
    write_manifest(dst, dataclasses.replace(m, table_versions={**m.table_versions, T.CONTENTS: table.version},
                                            layouts={}))


def test_index_without_page_column_is_updated_then_read(built, tmp_path):
    corpus, index, _ = built
    old, new_corpus = str(tmp_path / "old"), str(tmp_path / "corpus")
    _as_index_without_page(index, old)
    assert "page" not in IndexReader(old).arrow(T.CONTENTS).column_names
    with pytest.raises(IndexError_, match="vdgr update"):        # no layouts yet: a clear message
        KnowledgeBase.open(old, QueryConfig(embedding=HASHING))
    shutil.copytree(corpus, new_corpus)
    with open(os.path.join(new_corpus, "net/routers/guide.md"), "a", encoding="utf-8") as f:
        f.write("\n## Range\n\nThe Orbit X2 reaches 40 metres indoors.\n")
    report = run_update(_config(new_corpus, old))
    assert report.plan.changed == ("net/routers/guide.md",)
    # the older index lacks a column this version writes: the update rebuilds it whole
    rows = IndexReader(old).arrow(T.CONTENTS).select(["source", "page", "text"]).to_pylist()
    assert any("40 metres" in r["text"] for r in rows)
    assert any(r["page"] for r in rows if r["source"].endswith(".pdf"))
    assert {r["page"] for r in rows if r["source"].endswith(".md")} == {None}
    kb = KnowledgeBase.open(old, QueryConfig(embedding=HASHING))
    top = kb.query("How long do I hold RESET until the LED blinks amber?", k=5).evidence[0]
    assert (top.source, top.page) == ("net/routers/manual.pdf", 2)


@pytest.mark.parametrize("in_driver_max", [0, 200], ids=["pipeline", "driver"])
def test_update_of_a_pdf_equals_a_rebuild(built, tmp_path, in_driver_max):
    corpus, index, _ = built
    live, fresh, new_corpus = str(tmp_path / "live"), str(tmp_path / "fresh"), str(tmp_path / "corpus")
    shutil.copytree(index, live)
    shutil.copytree(corpus, new_corpus)
    with open(os.path.join(new_corpus, "net/routers/manual.pdf"), "wb") as f:
        f.write(D.pdf_multi_page(40)[0])
    os.remove(os.path.join(new_corpus, "net/routers/service.pdf"))
    cfg = _config(new_corpus, live).model_copy(update={"update_in_driver_max_documents": in_driver_max})
    report = run_update(cfg)
    assert report.plan.changed == ("net/routers/manual.pdf",)
    run_build(_config(new_corpus, fresh))
    a, b = IndexReader(live), IndexReader(fresh)
    assert {n: table_digest(n, a.arrow(n)) for n in T.TABLES} == {n: table_digest(n, b.arrow(n)) for n in T.TABLES}
    assert a.manifest.build_id == b.manifest.build_id
    pages = {r["page"] for r in a.arrow(T.CONTENTS).to_pylist() if r["source"] == "net/routers/manual.pdf"}
    assert pages and None not in pages
