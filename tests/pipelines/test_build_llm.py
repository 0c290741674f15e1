"""The LLM indexing path through the real pipeline, against the scripted OpenAI-compatible server.

One structured call per chunk (summary + entities with importance), one per directory summary,
a persistent LLM cache that makes a rebuild free, and a permanent failure that falls back to the
offline annotation and is counted, never passed off as done.
"""
from __future__ import annotations

import hashlib
import io
import json
import re

import pytest

from pipelines.run_build import run_build
from runners.index_cli import print_report
from schemas import tables as T
from schemas.config import BuildConfig, EmbeddingConfig, LLMConfig
from tests.support.corpus import write_corpus
from vdgr_core.store.reader import IndexReader

CORPUS = {
    "net/_meta.yaml": "description: Networking products\n",
    "net/routers/orbit.md": (
        "# Orbit X2 Manual\n\nThe Orbit X2 router manual.\n\n"
        "## Factory reset\n\nHold RESET on the Orbit X2 for 10 seconds until the LED blinks amber.\n\n"
        "## Scheduler\n\nThe DL_MIMO_Mode scheduler drives the SKU-90214-B radio.\n"),
    "net/switches/nova.md": (
        "# Nova Switch Guide\n\n## Ports\n\nThe Nova switch has 48 ports and a SKU-90214-B uplink.\n"),
    "hr/leave.md": "# Leave policy\n\n## Annual leave\n\nEmployees get 25 days of annual leave.\n",
}
FAIL_MARKER = "QUARANTINE-7781"
VOCAB = ("Orbit X2", "RESET", "DL_MIMO_Mode", "SKU-90214-B", "Nova switch", "annual leave", "LED")
IMPORTANCE = 0.73


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def _kind(request: dict) -> str:
    if request["_path"].endswith("/embeddings"):
        return "embeddings"
    return request["response_format"]["json_schema"]["name"]


def _user_text(request: dict) -> str:
    return next(m["content"] for m in request["messages"] if m["role"] == "user")


def responder(request: dict):
    """Chunk annotation: summary tagged with the prompt's digest, entities from VOCAB that occur.
    Directory summary: tagged likewise. A chunk prompt holding FAIL_MARKER is rejected (400)."""
    kind = _kind(request)
    text = _user_text(request)
    if kind == "ChunkAnnotation":
        if FAIL_MARKER in text:
            return (400, "this request is rejected by the test")
        ents = [{"name": v, "importance": IMPORTANCE} for v in VOCAB if v in text]
        return json.dumps({"summary": f"LLM chunk summary {_digest(text)}.", "entities": ents})
    if kind == "DirectorySummary":
        return json.dumps({"summary": f"LLM directory summary {_digest(text)}."})
    return (404, f"unexpected request kind {kind}")


def _config(corpus, index, server, cache):
    return BuildConfig(corpus=str(corpus), index=str(index), embedding=EmbeddingConfig(kind="hashing"),
                       llm=LLMConfig(base_url=server.url, model="scripted", cache_path=str(cache),
                                     backoff_s=0.0))


def _by_kind(server) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in server.chat_requests():
        out.setdefault(_kind(r), []).append(r)
    return out


def test_llm_annotates_every_chunk_once_and_a_rebuild_is_free(openai_server, tmp_path):
    openai_server.responder = responder
    corpus = write_corpus(str(tmp_path / "corpus"), CORPUS)
    cfg = _config(corpus, tmp_path / "index", openai_server, tmp_path / "llm.sqlite")
    first = run_build(cfg)

    reader = IndexReader(str(tmp_path / "index"))
    contents = reader.arrow(T.CONTENTS).to_pylist()
    dirs = reader.arrow(T.DIRECTORIES).to_pylist()
    entities = reader.arrow(T.ENTITIES).to_pylist()
    sent = _by_kind(openai_server)

    # exactly one annotation call per distinct chunk, each for a different chunk
    annotations = sent["ChunkAnnotation"]
    assert len(contents) >= 5
    assert len(annotations) == len(contents)
    assert len({_user_text(r) for r in annotations}) == len(contents)
    for c in contents:
        assert any(c["text"] in _user_text(r) for r in annotations)
        # the summary is the scripted reply to this chunk's prompt
        assert re.fullmatch(r"LLM chunk summary [0-9a-f]{10}\.", c["summary"]), c["summary"]
    replies = {f"LLM chunk summary {_digest(_user_text(r))}." for r in annotations}
    assert {c["summary"] for c in contents} <= replies

    # directory summaries come from the LLM (a directory with nothing under it keeps its title)
    dir_replies = {f"LLM directory summary {_digest(_user_text(r))}." for r in sent["DirectorySummary"]}
    llm_dirs = [d for d in dirs if d["summary"] in dir_replies]
    assert len(llm_dirs) == len(sent["DirectorySummary"]) >= 4
    for d in dirs:
        if d["full_path"] in (["net"], ["hr"], ["net", "routers"]):
            assert d["summary"] in dir_replies, d

    # entities are the LLM's, with its importance, and only names that occur
    assert entities and {e["kind"] for e in entities} == {"llm"}
    assert all(e["importance"] == pytest.approx(IMPORTANCE) for e in entities)
    assert {e["norm"] for e in entities if e["domain"] == "net"} >= {"dl mimo mode", "sku 90214 b", "orbit x2"}
    sku = next(e for e in entities if e["domain"] == "net" and e["norm"] == "sku 90214 b")
    assert sku["chunk_frequency"] == 2 and sku["doc_frequency"] == 2

    assert first.llm_calls == len(openai_server.chat_requests())
    assert first.llm_fallbacks == 0

    # a second build with the same index folder and LLM cache file sends nothing
    n_before = len(openai_server.requests)
    again = run_build(cfg)
    assert len(openai_server.requests) == n_before
    assert again.llm_calls == 0 and again.llm_fallbacks == 0
    assert again.manifest.build_id == first.manifest.build_id


def test_permanent_llm_failure_falls_back_offline_and_is_counted(openai_server, tmp_path):
    openai_server.responder = responder
    files = dict(CORPUS)
    files["net/switches/quarantine.md"] = (
        "# Quarantine procedure\n\n## Isolation\n\n"
        f"Mark the Nova switch port with tag {FAIL_MARKER} and disable the uplink.\n")
    corpus = write_corpus(str(tmp_path / "corpus"), files)
    cfg = _config(corpus, tmp_path / "index", openai_server, tmp_path / "llm.sqlite")
    report = run_build(cfg)

    contents = IndexReader(str(tmp_path / "index")).arrow(T.CONTENTS).to_pylist()
    failed = [c for c in contents if FAIL_MARKER in c["text"]]
    fine = [c for c in contents if FAIL_MARKER not in c["text"]]
    assert len(failed) == 1 and fine
    # the chunk is indexed, with the offline (extractive) summary and statistical terms
    assert not failed[0]["summary"].startswith("LLM chunk summary")
    assert FAIL_MARKER in failed[0]["summary"] or "Nova switch" in failed[0]["summary"]
    assert all(c["summary"].startswith("LLM chunk summary") for c in fine)
    entities = IndexReader(str(tmp_path / "index")).arrow(T.ENTITIES).to_pylist()
    assert {e["kind"] for e in entities} - {"llm"}, "the fallback chunk's terms come from the offline extractor"
    # a 400 is permanent: one request, no retries; the build reports it
    rejected = [r for r in _by_kind(openai_server)["ChunkAnnotation"] if FAIL_MARKER in _user_text(r)]
    assert len(rejected) == 1
    assert report.llm_fallbacks == 1
    out = io.StringIO()
    print_report(report, out=out)
    assert re.search(r"LLM fallbacks\s+1 ", out.getvalue())

    # the failure is not cached as if it were an answer: the next build asks again (and only that)
    n_before = len(openai_server.requests)
    again = run_build(cfg)
    new = openai_server.requests[n_before:]
    assert len(new) == 1 and FAIL_MARKER in _user_text(new[0])
    assert again.llm_fallbacks == 1 and again.llm_calls == 1
