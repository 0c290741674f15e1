"""``GET /v1/documents/{id}`` on a real hashing build of a small corpus (Markdown, a PDF, an
ACL-restricted folder, a document with a credential), served by a real uvicorn server; and
what else the search page relies on (line breaks in evidence, citations in a stream)."""
from __future__ import annotations

import http.client
import json

import pytest

from runners.cli import main
from runners.serve.documents import DocumentSource
from runners.serve.errors import ApiError
from schemas.errors import ConfigError
from tests.support.live_server import HR, STAFF, write_keys
from tests.support.served_corpus import ORBIT, PDF
from vdgr_core import ids


def doc(rel: str) -> str:
    return ids.doc_id(rel)


@pytest.fixture(scope="module")
def served(documents_live):
    return documents_live


def get(server, path: str, key: str | None = STAFF) -> tuple[int, dict, bytes]:
    conn = http.client.HTTPConnection(server.host, server.port, timeout=60)
    try:
        conn.request("GET", path, headers={"Authorization": f"Bearer {key}"} if key else {})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def test_a_pdf_is_served_to_its_reader_and_evidence_names_it(served):
    status, _, body = served.request("POST", "/v1/query", {"question": "Factory reset LED blinks amber", "k": 5},
                                     key=STAFF)
    assert status == 200
    pdf_ev = [e for e in body["evidence"] if e["source"] == "net/routers/x2.pdf"]
    assert pdf_ev and pdf_ev[0]["page"] == 2 and pdf_ev[0]["doc_id"] == doc("net/routers/x2.pdf")
    status, headers, raw = get(served, "/v1/documents/" + pdf_ev[0]["doc_id"])
    assert status == 200 and raw == PDF
    assert headers["content-type"] == "application/pdf"
    assert headers["content-disposition"] == "inline; filename*=UTF-8''x2.pdf"
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["x-vdgr-build-id"] == served.holder.current().build_id


def test_text_sources_are_plain_text_in_a_sandbox(served):
    status, headers, raw = get(served, "/v1/documents/" + doc("net/routers/orbit.md"))
    assert status == 200 and raw.decode("utf-8") == ORBIT
    assert headers["content-type"] == "text/plain; charset=utf-8"
    assert headers["content-security-policy"].startswith("sandbox")


def test_a_document_the_caller_cannot_read_is_answered_like_a_missing_one(served):
    reader = served.holder.current().kb.reader
    statuses = {d["path"]: d["status"] for d in reader.arrow("documents", ["path", "status"]).to_pylist()}
    assert statuses["net/routers/empty.md"] == "dead_letter" and statuses["hr/salary.md"] == "indexed"
    salary = doc("hr/salary.md")
    assert get(served, "/v1/documents/" + salary, key=HR)[0] == 200
    forbidden = get(served, "/v1/documents/" + salary, key=STAFF)
    missing = get(served, "/v1/documents/" + doc("hr/nothing-here.md"), key=STAFF)
    malformed = get(served, "/v1/documents/not-an-id", key=STAFF)
    dead_letter = get(served, "/v1/documents/" + doc("net/routers/empty.md"), key=STAFF)
    assert forbidden[0] == missing[0] == malformed[0] == dead_letter[0] == 404
    assert forbidden[2] == missing[2] == malformed[2] == dead_letter[2]
    assert json.loads(forbidden[2]) == {"error": {"type": "not_found_error", "message": "document not found"}}
    assert b"Quorvex" not in forbidden[2]


def test_a_credential_is_needed(served):
    status, headers, _ = get(served, "/v1/documents/" + doc("net/routers/orbit.md"), key=None)
    assert status == 401 and headers["www-authenticate"] == "Bearer"


@pytest.mark.parametrize("path", ["..%2F..%2F..%2Fetc%2Fpasswd", "%2Fetc%2Fpasswd", "..", "%2e%2e",
                                  "..%5C..%5Cetc%5Cpasswd", "x2.pdf", "net%2Frouters%2Fx2.pdf"])
def test_paths_are_not_ids(served, path):
    status, _, raw = get(served, "/v1/documents/" + path)
    assert status == 404 and b"root:" not in raw and not raw.startswith(b"%PDF")


def test_nothing_is_read_outside_the_corpus_root(served):
    """moved.md is now a symlink to a file outside the root with the indexed bytes: not served."""
    status, _, raw = get(served, "/v1/documents/" + doc("net/routers/moved.md"))
    assert status == 404 and json.loads(raw)["error"]["message"] == "document not found"


def test_a_file_changed_or_gone_since_the_build_is_not_served(served):
    changed = get(served, "/v1/documents/" + doc("net/routers/changing.md"))
    gone = get(served, "/v1/documents/" + doc("net/routers/gone.md"))
    assert changed[0] == gone[0] == 409
    assert b"AWS_SECRET" not in changed[2]
    assert "changed since the index was built" in json.loads(changed[2])["error"]["message"]
    assert "no longer in the corpus" in json.loads(gone[2])["error"]["message"]


def test_no_more_is_read_than_the_build_could_index(served):
    """A file grown past the build's max_file_bytes is refused like a changed one, after
    reading at most one byte more than that."""
    from dataclasses import replace
    from types import SimpleNamespace

    real = served.holder.current().kb.reader
    small = SimpleNamespace(manifest=replace(real.manifest, build_id="small-limit",
                                             config={**real.manifest.config, "limits": {"max_file_bytes": 10}}),
                            arrow=real.arrow)
    source = DocumentSource(served.corpus)
    with pytest.raises(ApiError) as err:
        source.fetch(small, doc("net/routers/orbit.md"), ["staff"])
    assert err.value.status == 409 and "changed since the index was built" in err.value.message
    assert source.fetch(real, doc("net/routers/orbit.md"), ["staff"]).body == ORBIT.encode("utf-8")


def test_a_document_with_masked_credentials_is_not_served(served):
    status, _, raw = get(served, "/v1/documents/" + doc("net/ops/keys.md"))
    assert status == 403 and b"AKIA" not in raw
    assert "credentials were masked" in json.loads(raw)["error"]["message"]


def test_without_a_corpus_root_no_document_is_served(served, tmp_path):
    with pytest.raises(ApiError) as err:
        DocumentSource(None).fetch(served.holder.current().kb.reader, doc("net/routers/orbit.md"), ["staff"])
    assert err.value.status == 404 and "--corpus" in err.value.message
    with pytest.raises(ConfigError, match="is not a folder"):
        DocumentSource(str(tmp_path / "missing"))


def test_serve_refuses_a_corpus_that_is_not_a_folder(served, tmp_path, capsys):
    keys = write_keys(str(tmp_path / "keys.yaml"))
    index = served.holder.current().kb.reader.index_dir
    assert main(["serve", "--index", index, "--api-keys", keys, "--embedding", "hashing",
                 "--corpus", str(tmp_path / "missing")]) == 2
    assert "--corpus" in capsys.readouterr().err


# ---- what the search page relies on besides the documents ---------------------------------

def test_evidence_text_keeps_its_line_breaks(served):
    status, _, body = served.request("POST", "/v1/query", {"question": "How do I reset the router? Unplug the cable"},
                                     key=STAFF)
    assert status == 200
    orbit = [e["text"] for e in body["evidence"] if e["source"] == "net/routers/orbit.md"]
    assert any("To reset the router:\n\n1. Unplug the cable.\n2. Hold RESET" in t for t in orbit), orbit


def test_a_streamed_answer_ends_with_the_citations_of_its_text(served):
    question = "How do I reset the router?"
    chunks = list(served.sse("/v1/chat/completions", {"model": "vdgr", "stream": True,
                                                      "messages": [{"role": "user", "content": question}]}, STAFF))
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks).strip()
    final = chunks[-1]
    assert final["citations"] and len(final["evidence"]) >= max(c["evidence"] for c in final["citations"])
    for c in final["citations"]:
        assert text[c["start"]:c["end"]] == f"[{c['evidence']}]"
    _, _, plain = served.request("POST", "/v1/query", {"question": question}, key=STAFF)
    assert final["citations"] == plain["citations"]
