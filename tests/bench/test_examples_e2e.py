"""End to end on examples/corpus with the real CLI (hashing embedder: no model, ~10 s)."""

import pytest

from bench.common import REPO, read_jsonl, write_jsonl
from bench.quality.run_eval import query_rows, score_file
from bench.vdgr_cli import ensure_index, query_flags, run

pytestmark = pytest.mark.skipif(not query_flags(), reason="vdgr CLI not available")


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    work = tmp_path_factory.mktemp("examples")
    ensure_index(REPO / "examples" / "corpus", work / "index", ["--embedding", "hashing"], work / "index.log")
    qs = read_jsonl(REPO / "examples" / "questions.jsonl")
    write_jsonl(work / "q.jsonl", query_rows(qs))
    rc, _ = run(["query", "--index", str(work / "index"), "--questions", str(work / "q.jsonl"),
                 "--out", str(work / "r.jsonl")], work / "query.log")
    assert rc == 0, (work / "query.log").read_text()
    return qs, work / "r.jsonl"


def test_example_questions_find_their_sections(results):
    qs, out = results
    agg, _ = score_file(qs, out, (1, 5))
    assert agg["missing"] == 0.0
    assert agg["hit@5"] >= 0.75
    assert agg["acl_leak"] == 0.0                       # no group: the netops note stays hidden


def test_versions_stay_apart(results):
    _, out = results
    by_id = {r["id"]: r for r in read_jsonl(out)}
    for qid, version in (("ex-reset-v1", "1.0"), ("ex-reset-v2", "2.0")):
        ev = by_id[qid]["evidence"]
        assert ev and all(e["version"] == version for e in ev)


def test_index_is_reused_when_corpus_is_unchanged(results, tmp_path):
    src = REPO / "examples" / "corpus"
    info = ensure_index(src, tmp_path / "index", ["--embedding", "hashing"], tmp_path / "a.log")
    again = ensure_index(src, tmp_path / "index", ["--embedding", "hashing"], tmp_path / "b.log")
    assert not info["reused"] and again["reused"]


def test_an_index_embedded_otherwise_is_built_again(tmp_path, monkeypatch):
    """The stamp names the model id the arguments resolve to on this host: an index built where
    ``auto`` meant another precision is not reused."""
    src = REPO / "examples" / "corpus"
    assert ensure_index(src, tmp_path / "index", ["--embedding", "hashing"], tmp_path / "a.log")["embedding_model"] \
        == "hashing:v1:384"
    monkeypatch.setattr("bench.vdgr_cli.embedding_model_of", lambda args: "hashing:v0:384")
    assert not ensure_index(src, tmp_path / "index", ["--embedding", "hashing"], tmp_path / "b.log")["reused"]
