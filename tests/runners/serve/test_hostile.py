"""`vdgr serve` under hostile clients: a real `vdgr serve` process on 127.0.0.1 (issue 28).

One server process for the module (``python -m runners.cli serve`` on the package's tiny
index). Each test that fails authentications speaks for its own client address through
``X-Forwarded-For`` (uvicorn trusts it from 127.0.0.1, as behind a local proxy), so the
failed-authentication budget of one test never spends another's.
"""
from __future__ import annotations

import http.client
import json
import queue
import re
import select
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Iterator, Optional

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runners.serve.errors import openai_shaped
from tests.support.fuzz import FUZZ
from tests.support.live_server import STAFF, LiveServer, json_or_text, write_keys
from tests.support.tiny_index import DIM

REPO = Path(__file__).resolve().parents[3]
MiB = 1 << 20
BIG = 100 * MiB
AUTH_FAILURES = 5                # --auth-failures-per-minute of the server under test
BODY_TIMEOUT_S = 2               # --body-timeout
NATIVE_KEYS = {"type", "message", "field"}
OPENAI_KEYS = {"message", "type", "param", "code"}


class Served(LiveServer):
    """A `vdgr serve` process: ``pid`` and the plain HTTP helpers of :class:`LiveServer`."""

    pid: int = 0

    def rss_bytes(self) -> int:
        """The server process's resident set (``VmRSS`` of ``/proc/<pid>/status``)."""
        with open(f"/proc/{self.pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        raise AssertionError("no VmRSS")

    def call(self, method: str, path: str, body: Any = None, key: Optional[str] = None,
             client: Optional[str] = None, headers: Optional[dict] = None) -> tuple[int, dict, Any]:
        h = dict(headers or {})
        if client:
            h["X-Forwarded-For"] = client
        return self.request(method, path, body, key=key, headers=h)


@pytest.fixture(scope="module")
def served(served_index, tmp_path_factory) -> Iterator[Served]:
    keys = write_keys(str(tmp_path_factory.mktemp("hostile") / "keys.yaml"))
    cmd = [sys.executable, "-m", "runners.cli", "serve", "--index", served_index, "--api-keys", keys,
           "--embedding", "hashing", "--embedding-dim", str(DIM), "--host", "127.0.0.1", "--port", "0",
           "--reload-interval", "0", "--rate-limit", "100000/minute",
           "--auth-failures-per-minute", str(AUTH_FAILURES), "--body-timeout", str(BODY_TIMEOUT_S)]
    proc = subprocess.Popen(cmd, cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    lines: "queue.Queue[Optional[str]]" = queue.Queue()

    def drain():                 # the log, read to its end so the pipe never fills
        for line in proc.stderr:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=drain, daemon=True).start()
    port, log = None, []
    try:
        while port is None:
            line = lines.get(timeout=120)
            if line is None:
                raise RuntimeError("vdgr serve exited:\n" + "".join(log))
            log.append(line)
            m = re.search(r"running on http://127\.0\.0\.1:(\d+)", line)
            port = int(m.group(1)) if m else None
        server = Served(f"http://127.0.0.1:{port}", "127.0.0.1", port, app=None, holder=None)
        server.pid = proc.pid
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def assert_envelope(path: str, status: int, body: Any, field: Optional[str] = None) -> dict:
    """``body`` is the error envelope of ``path``'s shape; its inner object."""
    assert status >= 400
    assert isinstance(body, dict) and set(body) == {"error"}, body
    err = body["error"]
    if openai_shaped(path):
        assert set(err) == OPENAI_KEYS, err
        assert err["param"] == field
        assert isinstance(err["code"], str)
    else:
        assert {"type", "message"} <= set(err) <= NATIVE_KEYS, err
        assert err.get("field") == field
    assert isinstance(err["message"], str) and err["message"]
    assert isinstance(err["type"], str) and err["type"]
    return err


def _chunks(total: int, size: int = 64 * 1024) -> Iterator[bytes]:
    """``total`` bytes, one piece at a time: the test never holds the body."""
    piece = b"x" * size
    while total > 0:
        n = min(total, size)
        total -= n
        yield piece[:n]


def stream_post(server: Served, path: str, body: Iterator[bytes], *, length: Optional[int] = None,
                key: Optional[str] = None, client: Optional[str] = None) -> tuple[int, dict, Any, int]:
    """POST ``body`` piece by piece (``Content-Length: length``, or chunked without one).

    Sending stops once the server has answered (or closed): returns (status, headers, parsed
    body, bytes of the body sent).
    """
    head = [f"POST {path} HTTP/1.1", f"Host: {server.host}:{server.port}", "Content-Type: application/json"]
    head.append(f"Content-Length: {length}" if length is not None else "Transfer-Encoding: chunked")
    if key:
        head.append(f"Authorization: Bearer {key}")
    if client:
        head.append(f"X-Forwarded-For: {client}")
    sock = socket.create_connection((server.host, server.port), timeout=60)
    sent = 0
    try:
        try:
            sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode("ascii"))
            for piece in body:
                if select.select([sock], [], [], 0)[0]:      # answered: stop sending
                    break
                sock.sendall(piece if length is not None else b"%x\r\n%s\r\n" % (len(piece), piece))
                sent += len(piece)
            else:
                if length is None:
                    sock.sendall(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass                                             # closed on us: read the answer
        resp = http.client.HTTPResponse(sock)
        resp.begin()
        raw = resp.read()
        headers = {k.lower(): v for k, v in resp.getheaders()}
    finally:
        sock.close()
    return resp.status, headers, json_or_text(raw), sent


def refused(server: Served) -> dict[str, float]:
    _, _, text = server.request("GET", "/metrics")
    return {m.group(1): float(m.group(2))
            for m in re.finditer(r'^vdgr_refused_requests_total\{reason="(\w+)"\} (\S+)$', text, re.M)}


def _works(server: Served) -> None:
    status, _, body = server.call("POST", "/v1/query", {"question": "How many days of annual leave?"}, key=STAFF)
    assert status == 200 and body["evidence"], body
    assert server.request("GET", "/healthz")[0] == 200


# ---------------------------------------------------------------------------------------------
# 1. Bounded work per request before trust


def test_100_mb_bodies_are_refused_without_being_read(served):
    _works(served)                                   # warm: the first query's lazy loads are done
    before_metrics = refused(served)
    rss0 = served.rss_bytes()
    client = "198.51.100.1"

    status, headers, body, sent = stream_post(served, "/v1/query", _chunks(BIG), length=BIG, client=client)
    assert status == 401 and headers["www-authenticate"] == "Bearer"
    assert_envelope("/v1/query", status, body)
    assert headers.get("connection") == "close" and sent < BIG

    status, headers, body, sent = stream_post(served, "/v1/query", _chunks(BIG), client=client)   # chunked
    assert status == 401 and sent < BIG

    status, headers, body, sent = stream_post(served, "/v1/query", _chunks(BIG), length=BIG, key=STAFF)
    err = assert_envelope("/v1/query", status, body, field="body")
    assert status == 413 and str(BIG) in err["message"] and str(MiB) in err["message"]
    assert "--max-body-bytes" in err["message"] and sent < BIG

    status, headers, body, sent = stream_post(served, "/v1/query", _chunks(BIG), key=STAFF)      # chunked
    err = assert_envelope("/v1/query", status, body, field="body")
    assert status == 413 and f"more than {MiB} bytes" in err["message"] and sent < BIG

    status, _, body, _ = stream_post(served, "/v1/chat/completions", _chunks(BIG), length=BIG, key=STAFF)
    assert status == 413 and assert_envelope("/v1/chat/completions", status, body, field="body")

    assert served.rss_bytes() - rss0 < 50 * MiB
    after = refused(served)
    assert after["auth_failed"] - before_metrics["auth_failed"] == 2
    assert after["body_too_large"] - before_metrics["body_too_large"] == 3
    _works(served)


def test_a_declared_20_mb_body_sending_1_kb_is_refused_at_once(served):
    status, headers, body, sent = stream_post(served, "/v1/query", _chunks(1024), length=20_000_000, key=STAFF)
    assert status == 413 and headers.get("connection") == "close"
    assert "20000000 bytes declared" in assert_envelope("/v1/query", status, body, field="body")["message"]


def test_a_slow_body_gets_408_after_the_body_timeout(served):
    before = refused(served)["body_timeout"]
    sock = socket.create_connection((served.host, served.port), timeout=60)
    try:
        sock.sendall((f"POST /v1/query HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {STAFF}\r\n"
                      "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"question\"").encode())
        resp = http.client.HTTPResponse(sock)
        resp.begin()                                  # blocks until the server gives up
        body = json.loads(resp.read())
    finally:
        sock.close()
    err = assert_envelope("/v1/query", resp.status, body, field="body")
    assert resp.status == 408 and f"{BODY_TIMEOUT_S} s" in err["message"] and "--body-timeout" in err["message"]
    assert refused(served)["body_timeout"] == before + 1
    _works(served)


def test_an_invalid_content_length_is_400(served):
    status, _, body = served.call("POST", "/v1/query", '{"question": "x"}', key=STAFF,
                                  headers={"Content-Length": "-5"})
    assert status == 400


# ---------------------------------------------------------------------------------------------
# 2. One error envelope, strict request models

CHAT = "/v1/chat/completions"


def _chat(content: Any = "How many days of annual leave?", **extra) -> dict:
    return {"model": "vdgr", "messages": [{"role": "user", "content": content}], **extra}


@pytest.mark.parametrize("method, path, body, status, field, needle", [
    ("POST", "/v1/query", b'{"question": "caf\xe9 \xff"}', 400, "body", "UTF-8"),
    ("POST", CHAT, b'{"model": "vdgr", "messages": "\xc3"}', 400, "body", "UTF-8"),
    ("POST", "/v1/query", '{"question": ' + "[" * 1000 + "]" * 1000 + "}", 400, "body", "the limit is 64"),
    ("POST", CHAT, '{"model": "vdgr", "tools": ' + "[" * 1000 + "]" * 1000 + "}", 400, "body", "the limit is 64"),
    ("POST", "/v1/query", '{"question": "unterminated', 400, "body", "JSON"),
    ("POST", "/v1/query", "[1, 2]", 400, "body", "JSON object"),
    ("POST", "/v1/query", {"question": "x" * 4001}, 400, "question", "4000"),
    ("POST", CHAT, _chat("x" * 4001), 400, "messages", "the limit is 4000"),
    ("POST", "/v1/query", {"question": " \t\n "}, 400, "question", "empty"),
    ("POST", CHAT, _chat(" \n "), 400, "messages", "no user message"),
    ("POST", "/v1/query", {"question": "annual leave", "k": "5"}, 400, "k", "integer"),
    ("POST", "/v1/query", {"question": "annual leave", "k": True}, 400, "k", "integer"),
    ("POST", "/v1/query", {"question": "annual leave", "k": 51}, 400, "k", "50"),
    ("POST", CHAT, _chat(k="5"), 400, "k", "integer"),
    ("POST", CHAT, _chat(stream="yes"), 400, "stream", "boolean"),
    ("POST", CHAT, _chat(colour="red"), 400, "colour", "unknown field"),
    ("POST", CHAT, {"model": "vdgr", "messages": [{"role": "user", "content": "hi", "x": 1}]}, 400,
     "messages[0].x", "unknown field"),
    ("POST", CHAT, {"model": "vdgr", "messages": [{"role": "wizard", "content": "hi"}]}, 400,
     "messages[0].role", "user"),
    ("POST", "/v1/query", {"question": "annual leave", "colour": "red"}, 400, "colour", "unknown field"),
    ("GET", "/nope", None, 404, None, "/nope"),
    ("GET", "/v1/nope", None, 404, None, "/v1/nope"),
    ("GET", "/v1/query", None, 405, None, "allowed: POST"),
    ("POST", "/v1/models", {}, 405, None, "allowed: GET"),
    ("DELETE", "/healthz", None, 405, None, "allowed: GET"),
    ("GET", "/openapi.json", None, 404, None, "openapi"),
    ("GET", "/docs", None, 404, None, "/docs"),
])
def test_every_error_is_one_envelope_naming_the_field_and_limit(served, method, path, body, status, field, needle):
    got, _, out = served.call(method, path, body, key=STAFF)
    assert got == status, out
    err = assert_envelope(path, got, out, field=field)
    assert needle.lower() in err["message"].lower(), err["message"]


def test_a_chat_request_with_a_20_mb_unknown_field_is_refused(served):
    body = json.dumps(_chat(padding="x" * (20 * MiB))).encode()
    status, _, out, _ = stream_post(served, CHAT, iter([body[i:i + MiB] for i in range(0, len(body), MiB)]),
                                    length=len(body), key=STAFF)
    assert status == 413 and assert_envelope(CHAT, status, out, field="body")


def test_openai_parameters_are_accepted_and_ignored(served):
    status, _, out = served.call("POST", CHAT, _chat(temperature=0.2, max_tokens=50, user="u", stream=False,
                                                     stream_options=None, groups=["hr"]), key=STAFF)
    assert status == 200 and "25 days" in out["choices"][0]["message"]["content"]


# ---------------------------------------------------------------------------------------------
# 5. Abuse limits


def test_failed_authentications_are_limited_per_client_address(served):
    attacker, other = "203.0.113.9", "203.0.113.10"
    before = refused(served)
    codes = [served.call("GET", "/v1/domains", key=f"wrong-key-{n:04d}-xxxxxxxx", client=attacker)[0]
             for n in range(AUTH_FAILURES)]
    assert codes == [401] * AUTH_FAILURES                 # the whole budget, a burst
    # the budget refills at AUTH_FAILURES a minute: within as many more tries one is refused
    for n in range(AUTH_FAILURES):
        status, headers, body = served.call("GET", "/v1/domains", key=f"more-wrong-{n:04d}-xxxxxx", client=attacker)
        if status == 429:
            break
    assert status == 429 and int(headers["retry-after"]) >= 1
    err = assert_envelope("/v1/domains", status, body)
    assert err["type"] == "rate_limit_error" and "--auth-failures-per-minute" in err["message"]
    # refused before the credential is checked: a good key from that address learns nothing
    assert served.call("GET", "/v1/domains", key=STAFF, client=attacker)[0] == 429
    # OpenAI's shape on the OpenAI routes
    status, _, body = served.call("POST", CHAT, _chat(), key="wrong-key-openai-xxxxxxxx", client=attacker)
    assert status == 429 and assert_envelope(CHAT, status, body)["code"] == "rate_limit_exceeded"
    # other addresses are not affected
    assert served.call("GET", "/v1/domains", key=STAFF, client=other)[0] == 200
    status, _, body = served.call("GET", "/v1/models", key="wrong-key-other-xxxxxxxxx", client=other)
    assert status == 401 and assert_envelope("/v1/models", status, body)["code"] == "invalid_api_key"
    after = refused(served)
    assert after["auth_blocked"] - before["auth_blocked"] >= 3
    assert after["auth_failed"] - before["auth_failed"] >= AUTH_FAILURES + 1


# ---------------------------------------------------------------------------------------------
# 6. Fuzzed bodies: never a 5xx, always the envelope, and the server still serves

SCALAR = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30)
JSON = st.recursive(SCALAR, lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=10), inner, max_size=4), max_leaves=12)
QUERY_FIELDS = st.fixed_dictionaries({}, optional={"question": JSON | st.text(max_size=60), "k": JSON,
                                                   "domain": JSON, "version": JSON, "id": JSON, "groups": JSON})
MESSAGE = st.fixed_dictionaries({}, optional={"role": st.sampled_from(["user", "system", "assistant"]) | JSON,
                                              "content": st.text(max_size=60) | JSON, "name": JSON})
CHAT_FIELDS = st.fixed_dictionaries({}, optional={"model": st.just("vdgr") | JSON, "stream": JSON, "k": JSON,
                                                  "messages": st.lists(MESSAGE, max_size=3) | JSON,
                                                  "temperature": JSON, "extra": JSON})
BODIES = st.one_of(
    st.tuples(st.just("/v1/query"), QUERY_FIELDS.map(json.dumps)),
    st.tuples(st.just(CHAT), CHAT_FIELDS.map(json.dumps)),
    st.tuples(st.sampled_from(["/v1/query", CHAT]), JSON.map(json.dumps)),
    st.tuples(st.sampled_from(["/v1/query", CHAT]), st.binary(max_size=200)),
)


@FUZZ
@given(case=BODIES)
def test_fuzzed_bodies_never_get_a_5xx(served, case):
    path, body = case
    body = body if isinstance(body, bytes) else body.encode("utf-8")
    status, _, out = served.call("POST", path, body, key=STAFF)
    assert status < 500, (path, body, out)
    if status >= 400:
        assert_envelope(path, status, out, field=out["error"].get("param" if openai_shaped(path) else "field"))
    elif path == CHAT and not isinstance(out, str):                       # (a stream is text)
        assert out["object"] == "chat.completion"


def test_the_server_still_serves_after_the_hostile_clients(served):
    _works(served)
    status, _, text = served.request("GET", "/metrics")
    assert status == 200 and "vdgr_refused_requests_total" in text
