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
from vdgr_core.entities import title_terms
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


def _check_llm_annotations(sent, contents):
    """Every chunk got exactly one annotation call and carries the scripted reply."""
    annotations = sent["ChunkAnnotation"]
    assert len(annotations) == len(contents)
    assert len({_user_text(r) for r in annotations}) == len(contents)
    for c in contents:
        assert any(c["text"] in _user_text(r) for r in annotations)
    replies = {f"LLM chunk summary {_digest(_user_text(r))}." for r in annotations}
    return replies


def test_llm_indexing_fallback_recovery_and_free_rebuild(openai_server, tmp_path):
    reject = {"on": True}

    def script(request):
        if not reject["on"] and _kind(request) == "ChunkAnnotation":
            request = {**request, "messages": [
                {**m, "content": m["content"].replace(FAIL_MARKER, "")} for m in request["messages"]]}
            text = _user_text(request)
            ents = [{"name": v, "importance": IMPORTANCE} for v in VOCAB if v in text]
            return json.dumps({"summary": f"LLM chunk summary {_digest(text)}.", "entities": ents})
        return responder(request)

    openai_server.responder = script
    files = dict(CORPUS)
    files["net/switches/quarantine.md"] = (
        "# Quarantine procedure\n\n## Isolation\n\n"
        f"Mark the Nova switch port with tag {FAIL_MARKER} and disable the uplink.\n")
    corpus = write_corpus(str(tmp_path / "corpus"), files)
    index = str(tmp_path / "index")
    cfg = _config(corpus, index, openai_server, tmp_path / "llm.sqlite")

    # --- build 1: the endpoint rejects (HTTP 400, permanent) the one chunk holding FAIL_MARKER
    first = run_build(cfg)
    reader = IndexReader(index)
    contents = reader.arrow(T.CONTENTS).to_pylist()
    dirs = reader.arrow(T.DIRECTORIES).to_pylist()
    entities = reader.arrow(T.ENTITIES).to_pylist()
    sent = _by_kind(openai_server)
    assert len(contents) >= 6

    # exactly one annotation call per distinct chunk (a 400 is not retried)
    replies = _check_llm_annotations(sent, contents)
    failed = [c for c in contents if FAIL_MARKER in c["text"]]
    fine = [c for c in contents if FAIL_MARKER not in c["text"]]
    assert len(failed) == 1
    assert all(c["summary"] in replies for c in fine)
    # the failed chunk is indexed with the offline (extractive) annotation, and counted
    assert failed[0]["summary"] not in replies and "Nova switch" in failed[0]["summary"]
    assert first.llm_fallbacks == 1
    assert first.llm_calls == len(openai_server.chat_requests())
    out = io.StringIO()
    print_report(first, out=out)
    assert re.search(r"LLM fallbacks\s+1 ", out.getvalue())
    assert {e["kind"] for e in entities if e["domain"] == "net"} - {"llm"}, \
        "the fallback chunk's terms come from the offline extractor"

    # directory summaries come from the LLM (one call per directory with anything under it)
    dir_replies = {f"LLM directory summary {_digest(_user_text(r))}." for r in sent["DirectorySummary"]}
    assert len([d for d in dirs if d["summary"] in dir_replies]) == len(sent["DirectorySummary"])
    for d in dirs:
        if d["full_path"] in (["net"], ["hr"], ["net", "routers"], ["net", "switches"]):
            assert d["summary"] in dir_replies, d

    # LLM entities carry the scripted importance; only names that occur in the chunk
    llm_entities = [e for e in entities if e["kind"] == "llm"]
    assert {e["norm"] for e in llm_entities if e["domain"] == "net"} >= {"dl mimo mode", "sku 90214 b", "orbit x2"}
    assert all(e["importance"] == pytest.approx(IMPORTANCE) for e in llm_entities)
    sku = next(e for e in llm_entities if e["domain"] == "net" and e["norm"] == "sku 90214 b")
    assert sku["chunk_frequency"] == 2 and sku["doc_frequency"] == 2

    # --- build 2: the failure was not cached as an answer, so only that chunk is asked again
    reject["on"] = False
    n_before = len(openai_server.requests)
    second = run_build(cfg)
    new = openai_server.requests[n_before:]
    new_annotations = [r for r in new if _kind(r) == "ChunkAnnotation"]
    assert len(new_annotations) == 1 and FAIL_MARKER in _user_text(new_annotations[0])
    assert second.llm_fallbacks == 0 and second.llm_calls == len(new)
    contents = IndexReader(index).arrow(T.CONTENTS).to_pylist()
    entities = IndexReader(index).arrow(T.ENTITIES).to_pylist()
    assert all(c["summary"].startswith("LLM chunk summary") for c in contents)
    # every entity comes from the LLM, but for those the sections' titles name (title entities)
    titled = {t.norm for c in contents for t in title_terms(c["title"])}
    assert titled and {e["kind"] for e in entities if e["norm"] not in titled} == {"llm"}

    # --- build 3: same index folder and LLM cache file: no LLM HTTP call at all
    n_before = len(openai_server.requests)
    third = run_build(cfg)
    assert len(openai_server.requests) == n_before
    assert third.llm_calls == 0 and third.llm_fallbacks == 0
    assert third.manifest.build_id == second.manifest.build_id


@pytest.mark.parametrize("in_driver_max", [0, 200], ids=["pipeline", "driver"])
def test_llm_update_asks_only_for_the_changed_chunks_and_directories(openai_server, tmp_path, in_driver_max):
    """An update with an LLM configured: one annotation call per new chunk, directory summaries
    only for the touched directories and their ancestors (the rest from the cache), and the
    index a full build gives."""
    from pipelines.run_update import run_update
    from vdgr_core.store.writer import table_digest

    openai_server.responder = responder
    corpus = write_corpus(str(tmp_path / "corpus"), CORPUS)
    cache = tmp_path / "llm.sqlite"
    cfg = _config(corpus, str(tmp_path / "index"), openai_server, cache)
    run_build(cfg)
    with open(f"{corpus}/net/switches/nova.md", "a", encoding="utf-8") as f:
        f.write("\n## Fans\n\nThe Nova switch fan tray is SKU-90214-B compatible.\n")
    n_before = len(openai_server.requests)
    report = run_update(cfg.model_copy(update={"update_in_driver_max_documents": in_driver_max}))
    new = [r for r in openai_server.requests[n_before:] if r["_path"].endswith("/chat/completions")]
    annotated = [_user_text(r) for r in new if _kind(r) == "ChunkAnnotation"]
    assert len(annotated) == 1 and "fan tray" in annotated[0]             # the one new chunk
    summarized = [_user_text(r) for r in new if _kind(r) == "DirectorySummary"]
    assert summarized and all("Leave policy" not in t for t in summarized)  # hr untouched
    assert report.build.llm_calls == len(new) and report.build.llm_fallbacks == 0

    fresh = _config(corpus, str(tmp_path / "fresh"), openai_server, cache)
    run_build(fresh)
    live, rebuilt = IndexReader(cfg.index), IndexReader(fresh.index)
    assert {n: table_digest(n, live.arrow(n)) for n in T.TABLES} == {
        n: table_digest(n, rebuilt.arrow(n)) for n in T.TABLES}
