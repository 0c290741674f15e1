"""`vdgr serve` and `vdgr mcp --transport http` under hostile clients: real processes on
127.0.0.1 (issues 28 and 48).

One process of each command for the module, both started with the same guard flags
(:data:`GUARD_FLAGS`). The cases of the table :data:`CASES` and the tests taking ``target`` run
against both; the ones taking ``served`` are about ``vdgr serve``'s own routes.

Client addresses: on Linux every 127.0.0.0/8 address is this machine, so a test connects from
:data:`PROXY` (the one trusted proxy, ``--trusted-proxies``) to speak for a client named in
``X-Forwarded-For``, or from another 127.x address to be an untrusted peer of its own. Each
test uses addresses of its own, so the failed-authentication budget one test spends never
touches another's.
"""
from __future__ import annotations

import http.client
import json
import os
import re
import select
import socket
import subprocess
import sys
import threading
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

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
AUTH_FAILURES = 5                # --auth-failures-per-minute of the servers under test
BODY_TIMEOUT_S = 2               # --body-timeout
PROXY = "127.0.0.2"              # --trusted-proxies
GUARD_FLAGS = ["--auth-failures-per-minute", str(AUTH_FAILURES), "--body-timeout", str(BODY_TIMEOUT_S),
               "--trusted-proxies", PROXY, "--rate-limit", "100000/minute"]
NATIVE_KEYS = {"type", "message", "field"}
OPENAI_KEYS = {"message", "type", "param", "code"}


class Served(LiveServer):
    """A `vdgr serve` or `vdgr mcp` process: ``pid``, its log, and the plain HTTP helpers of
    :class:`LiveServer`."""

    pid: int = 0
    lines: list = None
    changed: threading.Condition = None

    def rss_bytes(self) -> int:
        """The server process's resident set (``VmRSS`` of ``/proc/<pid>/status``)."""
        with open(f"/proc/{self.pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        raise AssertionError("no VmRSS")

    def call(self, method: str, path: str, body: Any = None, key: Optional[str] = None,
             client: Optional[str] = None, peer: Optional[str] = None,
             headers: Optional[dict] = None) -> tuple[int, dict, Any]:
        """One request: from ``peer`` (a 127.x address), or for ``client`` through the trusted
        proxy (``X-Forwarded-For: client`` from :data:`PROXY`)."""
        h = dict(headers or {})
        if client:
            h["X-Forwarded-For"] = client
            peer = PROXY
        return self.request(method, path, body, key=key, headers=h, source=peer)

    def log_line(self, needle: str, timeout: float = 60) -> str:
        """The first line of the server's output holding ``needle`` (waits for it, bounded)."""
        with self.changed:
            found = self.changed.wait_for(lambda: any(line and needle in line for line in self.lines), timeout)
            assert found, f"no log line with {needle!r}"
            return next(line for line in self.lines if line and needle in line)


@contextmanager
def _process(kind: str, index: str, keys: str) -> Iterator[Served]:
    """``vdgr serve`` or ``vdgr mcp --transport http`` on 127.0.0.1 with :data:`GUARD_FLAGS`."""
    cmd = [sys.executable, "-m", "runners.cli", kind, *(["--transport", "http"] if kind == "mcp" else []),
           "--index", index, "--api-keys", keys, "--embedding", "hashing", "--embedding-dim", str(DIM),
           "--host", "127.0.0.1", "--port", "0", "--reload-interval", "0", "--workers-log-level", "info",
           *GUARD_FLAGS]
    proc = subprocess.Popen(cmd, cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    lines: list[str] = []
    changed = threading.Condition()

    def drain():                 # the log (access log included), read to its end so the pipe never fills
        for line in proc.stdout:
            with changed:
                lines.append(line)
                changed.notify_all()
        with changed:
            lines.append(None)
            changed.notify_all()

    threading.Thread(target=drain, daemon=True).start()
    try:
        with changed:
            changed.wait_for(lambda: None in lines or any("running on http://127.0.0.1:" in str(x) for x in lines),
                             120)
            if None in lines or not lines:
                raise RuntimeError(f"vdgr {kind} exited:\n" + "".join(x for x in lines if x))
            port = int(re.search(r"running on http://127\.0\.0\.1:(\d+)", "".join(x for x in lines if x)).group(1))
        server = Served(f"http://127.0.0.1:{port}", "127.0.0.1", port, app=None, holder=None)
        server.pid, server.lines, server.changed = proc.pid, lines, changed
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def processes(served_index, tmp_path_factory) -> Iterator[Callable[[str], Served]]:
    """``processes(kind)``: the module's process of ``kind``, started on first use."""
    keys = write_keys(str(tmp_path_factory.mktemp("hostile") / "keys.yaml"))
    with ExitStack() as stack:
        started: dict[str, Served] = {}

        def get(kind: str) -> Served:
            if kind not in started:
                started[kind] = stack.enter_context(_process(kind, served_index, keys))
            return started[kind]

        yield get


@pytest.fixture(scope="module")
def served(processes) -> Served:
    return processes("serve")


@dataclass
class Target:
    """One server under test and its protected request: ``POST /v1/query`` of ``vdgr serve``,
    a ``tools/list`` of ``vdgr mcp``."""

    kind: str
    server: Served
    path: str
    body: dict
    headers: dict = field(default_factory=dict)
    slash_path: str = "/healthz/"        # a route's path with a trailing slash

    def ask(self, key: Optional[str] = None, client: Optional[str] = None, peer: Optional[str] = None,
            headers: Optional[dict] = None, path: Optional[str] = None) -> tuple[int, dict, Any]:
        return self.server.call("POST", path or self.path, self.body, key=key, client=client, peer=peer,
                                headers={**self.headers, **(headers or {})})

    def works(self, **kw) -> None:
        status, headers, body = self.ask(key=STAFF, **kw)
        assert status == 200, body
        if self.kind == "serve":
            assert body["evidence"], body
        else:
            assert '"tools"' in body and '"search"' in body, body


MCP_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}


@pytest.fixture(scope="module", params=["serve", "mcp"])
def target(request, processes) -> Target:
    server = processes(request.param)
    if request.param == "serve":
        return Target("serve", server, "/v1/query", {"question": "How many days of annual leave?"})
    return Target("mcp", server, "/mcp", MCP_LIST, {"Accept": "application/json, text/event-stream"},
                  slash_path="/mcp/")


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


def assert_secured(headers: dict) -> None:
    """The security headers every answer carries (issue 48)."""
    assert headers.get("x-content-type-options") == "nosniff", headers
    assert headers.get("referrer-policy") == "no-referrer", headers
    assert headers.get("x-frame-options") == "DENY", headers
    assert "frame-ancestors 'none'" in headers.get("content-security-policy", ""), headers


def _chunks(total: int, size: int = 64 * 1024) -> Iterator[bytes]:
    """``total`` bytes, one piece at a time: the test never holds the body."""
    piece = b"x" * size
    while total > 0:
        n = min(total, size)
        total -= n
        yield piece[:n]


def stream_post(server: Served, path: str, body: Iterator[bytes], *, length: Optional[int] = None,
                key: Optional[str] = None, client: Optional[str] = None, peer: Optional[str] = None,
                headers: Optional[dict] = None) -> tuple[int, dict, Any, int]:
    """POST ``body`` piece by piece (``Content-Length: length``, or chunked without one), from
    ``peer`` or for ``client`` through the trusted proxy.

    Sending stops once the server has answered (or closed): returns (status, headers, parsed
    body, bytes of the body sent).
    """
    head = [f"POST {path} HTTP/1.1", f"Host: {server.host}:{server.port}", "Content-Type: application/json"]
    head.append(f"Content-Length: {length}" if length is not None else "Transfer-Encoding: chunked")
    head += [f"{k}: {v}" for k, v in (headers or {}).items()]
    if key:
        head.append(f"Authorization: Bearer {key}")
    if client:
        head.append(f"X-Forwarded-For: {client}")
        peer = PROXY
    sock = socket.create_connection((server.host, server.port), timeout=60,
                                    source_address=(peer, 0) if peer else None)
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


def stalled_post(target: "Target", declared: int, sent: bytes) -> tuple[int, dict, Any]:
    """A POST that declares ``declared`` bytes, sends ``sent`` and stalls: the answer."""
    server = target.server
    extra = "".join(f"{k}: {v}\r\n" for k, v in target.headers.items())
    sock = socket.create_connection((server.host, server.port), timeout=60)
    try:
        sock.sendall((f"POST {target.path} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
                      f"Authorization: Bearer {STAFF}\r\n{extra}Content-Type: application/json\r\n"
                      f"Content-Length: {declared}\r\n\r\n").encode() + sent)
        resp = http.client.HTTPResponse(sock)
        resp.begin()                                  # blocks until the server gives up
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, json_or_text(resp.read())
    finally:
        sock.close()


def refused(server: Served) -> dict[str, float]:
    _, _, text = server.request("GET", "/metrics")
    return {m.group(1): float(m.group(2))
            for m in re.finditer(r'^vdgr_refused_requests_total\{reason="(\w+)"\} (\S+)$', text, re.M)}


def _works(server: Served) -> None:
    status, _, body = server.call("POST", "/v1/query", {"question": "How many days of annual leave?"}, key=STAFF)
    assert status == 200 and body["evidence"], body
    assert server.request("GET", "/healthz")[0] == 200


# ---------------------------------------------------------------------------------------------
# 1. One table of hostile requests, against both servers


@dataclass(frozen=True)
class Case:
    """A hostile request (``send(target, peer)`` -> (path, status, headers, body)) and what
    it must get: the status, the envelope's field, words of its message, text it must not
    echo, and ``Connection: close`` when the body was left unread."""

    id: str
    send: Callable[["Target", str], tuple]
    status: int
    field: Optional[str] = None
    needle: str = ""
    absent: str = ""
    close: bool = False


def _post(headers: Optional[dict] = None, key: Optional[str] = STAFF, path: Optional[str] = None, client=None):
    def send(t: Target, peer: str):
        p = path or t.path
        return (p, *t.ask(key=key, peer=None if client else peer, client=client, headers=headers, path=p))
    return send


def _streamed(total: int, declared: bool):
    def send(t: Target, peer: str):
        status, headers, body, sent = stream_post(t.server, t.path, _chunks(total), key=STAFF, peer=peer,
                                                  length=total if declared else None, headers=t.headers)
        assert sent < total or total <= 2 * MiB
        return t.path, status, headers, body
    return send


def _get(path_of: Callable[["Target"], str], headers: Optional[dict] = None):
    def send(t: Target, peer: str):
        p = path_of(t)
        method = "GET" if t.kind == "serve" else "POST"        # every path of the MCP server needs a key
        return (p, *t.server.call(method, p, None if method == "GET" else t.body, key=STAFF, peer=peer,
                                  headers={**t.headers, **(headers or {})}))
    return send


MARKUP = "/<script>alert(1)</script>"
CASES = [
    Case("no credential", _post(key=None), 401, needle="missing credential"),
    Case("not a bearer credential", _post(headers={"Authorization": "Basic eDp5"}, key=None), 401,
         needle="Bearer <key>", absent="eDp5"),
    Case("unknown key", _post(key="wrong-key-0123456789-abcdef"), 401, needle="unknown credential",
         absent="wrong-key"),
    Case("100 MB declared", _streamed(BIG, declared=True), 413, "body", "--max-body-bytes", close=True),
    Case("100 MB chunked", _streamed(BIG, declared=False), 413, "body", f"more than {MiB} bytes", close=True),
    Case("2 MiB sent whole", _streamed(2 * MiB, declared=True), 413, "body", f"the limit is {MiB} bytes"),
    Case("2 MiB chunked", _streamed(2 * MiB, declared=False), 413, "body", f"the limit is {MiB} bytes"),
    Case("a body that stalls", lambda t, peer: (t.path, *stalled_post(t, 200, b'{"id": 1')), 408, "body",
         f"within {BODY_TIMEOUT_S} s", close=True),
    Case("a foreign Host", _post(headers={"Host": "evil.example"}), 400, "Host", "--allowed-hosts",
         absent="evil.example"),
    Case("a trailing slash and a foreign Host", _get(lambda t: t.slash_path, {"Host": "evil.example"}), 400,
         "Host", absent="evil.example"),
    Case("a trailing slash", _get(lambda t: t.slash_path), 404, needle="no such endpoint", absent="/healthz"),
    Case("markup in the path", _get(lambda t: MARKUP), 404, needle="no such endpoint", absent="script"),
    Case("forwarding headers that disagree", _post(client="203.0.113.50", headers={"Forwarded": "for=203.0.113.51"}),
         400, "Forwarded", "name different clients", absent="203.0.113"),
]


@pytest.mark.parametrize("n, case", list(enumerate(CASES)), ids=[c.id for c in CASES])
def test_hostile_requests_get_the_same_refusal_from_both_servers(target, n, case):
    path, status, headers, body = case.send(target, f"127.0.1.{n + 1}")
    assert status == case.status, body
    err = assert_envelope(path, status, body, field=case.field)
    assert case.needle.lower() in err["message"].lower(), err["message"]
    assert path not in err["message"]                 # the route template at most, never the path sent
    if case.absent:
        assert case.absent not in json.dumps(body), body
    if status == 401:
        assert headers["www-authenticate"] == "Bearer"
    if case.close:
        assert headers.get("connection") == "close"
    assert "location" not in headers
    assert_secured(headers)
    target.works(peer=f"127.0.1.{n + 1}")        # the server still serves that address


def test_an_invalid_content_length_is_400(target):
    # refused by uvicorn's HTTP parser before the application (plain text; docs/SERVICE.md)
    assert target.ask(key=STAFF, headers={"Content-Length": "-5"})[0] == 400


def test_answers_carry_the_security_headers(target):
    status, headers, _ = target.ask(key=STAFF)
    assert status == 200
    assert_secured(headers)
    assert headers["content-security-policy"] == "default-src 'none'; frame-ancestors 'none'"


def test_100_mb_bodies_are_refused_without_being_read(target):
    target.works()                                   # warm: the first query's lazy loads are done
    serve = target.kind == "serve"
    before_metrics = refused(target.server) if serve else {}
    rss0 = target.server.rss_bytes()
    client = "198.51.100.1"
    path = target.path

    status, headers, body, sent = stream_post(target.server, path, _chunks(BIG), length=BIG, client=client,
                                              headers=target.headers)
    assert status == 401 and headers["www-authenticate"] == "Bearer"
    assert_envelope(path, status, body)
    assert headers.get("connection") == "close" and sent < BIG

    status, headers, body, sent = stream_post(target.server, path, _chunks(BIG), client=client,   # chunked
                                              headers=target.headers)
    assert status == 401 and sent < BIG

    status, headers, body, sent = stream_post(target.server, path, _chunks(BIG), length=BIG, key=STAFF,
                                              headers=target.headers)
    err = assert_envelope(path, status, body, field="body")
    assert status == 413 and str(BIG) in err["message"] and str(MiB) in err["message"]
    assert "--max-body-bytes" in err["message"] and sent < BIG

    status, headers, body, sent = stream_post(target.server, path, _chunks(BIG), key=STAFF,       # chunked
                                              headers=target.headers)
    err = assert_envelope(path, status, body, field="body")
    assert status == 413 and f"more than {MiB} bytes" in err["message"] and sent < BIG

    assert target.server.rss_bytes() - rss0 < 50 * MiB
    if serve:
        status, _, body, _ = stream_post(target.server, CHAT, _chunks(BIG), length=BIG, key=STAFF)
        assert status == 413 and assert_envelope(CHAT, status, body, field="body")
        after = refused(target.server)
        assert after["auth_failed"] - before_metrics["auth_failed"] == 2
        assert after["body_too_large"] - before_metrics["body_too_large"] == 3
    target.works()


def test_a_slow_body_gets_408_after_the_body_timeout(served):
    before = refused(served)["body_timeout"]
    status, _, body = stalled_post(Target("serve", served, "/v1/query", {}), 1000, b'{"question"')
    err = assert_envelope("/v1/query", status, body, field="body")
    assert status == 408 and f"{BODY_TIMEOUT_S} s" in err["message"] and "--body-timeout" in err["message"]
    assert refused(served)["body_timeout"] == before + 1
    _works(served)


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
    ("GET", "/nope", None, 404, None, "no such endpoint"),
    ("GET", "/v1/nope", None, 404, None, "no such endpoint"),
    ("GET", "/v1/documents/0123456789abcdef0123456789abcdef/", None, 404, None, "no such endpoint"),
    ("GET", "/v1/query", None, 405, None, "allowed: POST"),
    ("POST", "/v1/models", {}, 405, None, "allowed: GET"),
    ("DELETE", "/healthz", None, 405, None, "allowed: GET"),
    ("GET", "/openapi.json", None, 404, None, "openapi"),
    ("GET", "/docs", None, 404, None, "--openapi"),
])
def test_every_error_is_one_envelope_naming_the_field_and_limit(served, method, path, body, status, field, needle):
    got, _, out = served.call(method, path, body, key=STAFF)
    assert got == status, out
    err = assert_envelope(path, got, out, field=field)
    assert needle.lower() in err["message"].lower(), err["message"]
    if got == 404 and path not in ("/openapi.json", "/docs"):       # those two are named as routes
        assert path not in err["message"]             # no echo of the path (issue 48)


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


def test_requests_without_a_credential_neither_count_nor_block(target):
    peer = "127.0.2.1"
    for _ in range(7 * AUTH_FAILURES):
        status, _, body = target.ask(peer=peer)
        assert status == 401 and "missing credential" in body["error"]["message"], body
    target.works(peer=peer)


def test_a_spent_budget_is_429_with_retry_after_on_both_servers(target):
    attacker = "203.0.113.19"
    for n in range(2 * AUTH_FAILURES + 1):
        status, headers, body = target.ask(key=f"wrong-key-{n:04d}-xxxxxxxxxx", client=attacker)
        if status == 429:
            break
        assert status == 401
    assert status == 429 and int(headers["retry-after"]) >= 1
    err = assert_envelope(target.path, status, body)
    assert err["type"] == "rate_limit_error" and "--auth-failures-per-minute" in err["message"]
    assert target.ask(key=STAFF, client=attacker)[0] == 429         # a good key from there learns nothing
    target.works(client="203.0.113.20")                              # another address is not affected


def test_forwarding_headers_from_an_untrusted_peer_are_ignored(target):
    """Issue 48: rotating X-Forwarded-For / Forwarded values neither escape the limit nor lock
    out the addresses they name."""
    peer = "127.0.2.2"
    named = []
    for n in range(2 * AUTH_FAILURES + 1):
        victim = f"10.66.66.{n + 1}"
        named.append(victim)
        forged = {"X-Forwarded-For": victim} if n % 2 == 0 else {"Forwarded": f"for={victim}"}
        status, headers, body = target.ask(key=f"wrong-key-{n:04d}-xxxxxxxxxx", peer=peer, headers=forged)
        if status == 429:
            break
        assert status == 401, body
    assert status == 429 and int(headers["retry-after"]) >= 1        # the limit: counted against the peer
    # a blocked peer stays blocked, whatever it claims to be
    for forged in ({"X-Forwarded-For": "10.77.0.1"}, {"Forwarded": "for=10.77.0.2"}, {"X-Forwarded-For": PROXY}):
        assert target.ask(key=STAFF, peer=peer, headers=forged)[0] == 429
    # the lockout: no address it named is locked out
    for victim in named:
        target.works(client=victim)
    target.works(peer="127.0.2.3")


def test_a_trusted_proxy_names_the_right_most_untrusted_hop(target):
    real = "198.51.100.20"
    for n in range(2 * AUTH_FAILURES + 1):      # the client forges the left part; the proxy appends the truth
        status, _, body = target.ask(key=f"wrong-key-{n:04d}-xxxxxxxxxx", client=f"10.99.0.{n + 1}, {real}")
        if status == 429:
            break
        assert status == 401, body
    assert status == 429                                             # the limit holds behind the proxy
    # the lockout is the address the proxy saw, whatever is forged to its left or the header used
    assert target.ask(key=STAFF, client=real)[0] == 429
    assert target.ask(key=STAFF, client=f"10.99.1.1, {real}")[0] == 429
    assert target.ask(key=STAFF, client=f"{real}, {PROXY}")[0] == 429            # two trusted hops
    assert target.ask(key=STAFF, peer=PROXY, headers={"Forwarded": f'for="{real}:4711"'})[0] == 429
    assert target.ask(key=STAFF, peer=PROXY,
                      headers={"X-Forwarded-For": real, "Forwarded": f"for={real}"})[0] == 429   # both agree
    # other clients behind the proxy, and the proxy itself, are not locked out
    target.works(client="198.51.100.21")
    target.works(client=f"{real}, 198.51.100.22")        # the proxy saw .22: the forged left part is ignored
    target.works(peer=PROXY, headers={"Forwarded": 'for="[2001:db8::7]:4711"'})
    target.works(peer=PROXY)


def test_the_access_log_names_the_client_and_drops_query_strings(target):
    server = target.server
    secret = f"query-secret-{target.kind}-0123456789abcdef"
    if target.kind == "serve":
        assert server.call("GET", f"/healthz?api_key={secret}", client="192.0.2.77")[0] == 200
    else:
        assert target.ask(key=STAFF, client="192.0.2.77", path=f"/mcp?api_key={secret}")[0] == 200
    line = server.log_line("192.0.2.77")
    assert ("/healthz" if target.kind == "serve" else "/mcp") in line and "?" not in line and "200" in line
    # an untrusted peer is logged as itself, not as the address its header names
    assert target.ask(key=STAFF, peer="127.0.3.1", headers={"X-Forwarded-For": "192.0.2.78"})[0] == 200
    assert target.path in server.log_line("127.0.3.1")
    assert not any("192.0.2.78" in line for line in server.lines if line)
    assert not any(secret in line for line in server.lines if line)


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
