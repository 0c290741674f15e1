"""Vectors from an OpenAI-compatible /embeddings endpoint, through `vdgr index`, cached by content."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from runners.cli import main
from schemas import tables as T
from tests.support.corpus import write_corpus
from tests.support.openai_server import fake_vector
from vdgr_core.indexing.rows import content_embedding_text, directory_embedding_text
from vdgr_core.store.reader import IndexReader

FILES = {
    "net/routers/orbit.md": ("# Orbit X2 Manual\n\n## Factory reset\n\nHold RESET for 10 seconds.\n\n"
                             "## Scheduler\n\nThe DL_MIMO_Mode scheduler drives the radio.\n"),
    "hr/leave.md": "# Leave policy\n\n## Annual leave\n\nEmployees get 25 days of annual leave.\n",
}


def _embedded_texts(server) -> list[str]:
    out = []
    for r in server.requests:
        if r["_path"].endswith("/embeddings"):
            assert r["model"] == "scripted-embed"
            out += [r["input"]] if isinstance(r["input"], str) else list(r["input"])
    return out


def test_openai_embeddings_land_in_the_tables_and_a_rebuild_sends_nothing(openai_server, tmp_path, capsys):
    dim = openai_server.embedding_dim
    corpus = write_corpus(str(tmp_path / "corpus"), FILES)
    index = str(tmp_path / "index")
    argv = ["index", corpus, "--index", index, "--embedding", "openai",
            "--embedding-base-url", openai_server.url, "--embedding-model", "scripted-embed",
            "--embedding-dim", str(dim), "-q"]
    assert main(argv) == 0
    reader = IndexReader(index)
    assert reader.manifest.dim == dim
    assert reader.manifest.embedding_model == f"openai:scripted-embed:{dim}"

    texts = _embedded_texts(openai_server)
    assert len(texts) == len(set(texts))                    # each distinct text embedded once
    contents = reader.arrow(T.CONTENTS).to_pylist()
    assert contents
    for c in contents:
        text = content_embedding_text(c["path"], c["text"])
        assert text in texts
        np.testing.assert_allclose(c["vector"], fake_vector(text, dim), rtol=0, atol=1e-5)
    dirs = reader.arrow(T.DIRECTORIES).to_pylist()
    assert dirs
    entities = reader.arrow(T.ENTITIES).to_pylist()
    assert entities and all(len(e["vector"]) == dim for e in entities)
    dir_texts = {directory_embedding_text(SimpleNamespace(**d)) for d in dirs}
    for d in dirs:
        np.testing.assert_allclose(d["vector"], fake_vector(directory_embedding_text(SimpleNamespace(**d)), dim),
                                   rtol=0, atol=1e-5)
    # equal texts (a one-chunk section and its directory) are embedded once
    assert set(texts) == {content_embedding_text(c["path"], c["text"]) for c in contents} | dir_texts
    first_out = capsys.readouterr().out
    assert f"{len(texts):,d} computed, " in first_out      # the rest: equal texts taken from the memo

    # a rebuild into the same index folder embeds nothing: every vector is in the cache
    n_before = len(openai_server.requests)
    assert main(argv) == 0
    assert len(openai_server.requests) == n_before
    assert " 0 computed, " in capsys.readouterr().out
    again = IndexReader(index)
    assert again.manifest.build_id == reader.manifest.build_id
