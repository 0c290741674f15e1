"""``vdgr serve``'s application on a real uvicorn server (127.0.0.1, an ephemeral port), for tests.

``serve_index(index, keys, config=...)`` is a context manager yielding a :class:`LiveServer`
with ``url``, ``app`` and ``holder``; plain HTTP helpers (``request``, ``sse``) use the standard
library so the tests need no extra client.
"""
from __future__ import annotations

import http.client
import json
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Optional

import uvicorn
import yaml

from runners.serve.app import create_app
from runners.serve.auth import Authenticator, JWTSettings, KeysFile, RateLimiter
from runners.serve.snapshot import SnapshotHolder, open_snapshot
from runners.serve.startup import uvicorn_config

KEYS = {
    "keys": [
        {"key": "staff-key-0123456789abcdef", "name": "staff", "groups": ["staff"]},
        {"key": "hr-key-0123456789abcdef0123", "name": "hr", "groups": ["hr", "staff"]},
        {"key": "tight-key-0123456789abcdef01", "name": "tight", "groups": [], "rate_limit": "2/minute"},
    ]
}
STAFF, HR, TIGHT = (k["key"] for k in KEYS["keys"])


def json_or_text(raw):
    """A response body as JSON when it parses, else as it came."""
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def write_keys(path: str) -> str:
    with open(path, "w", encoding="utf-8") as f:
        yaml.safe_dump(KEYS, f)
    return path


@dataclass
class LiveServer:
    url: str
    host: str
    port: int
    app: Any
    holder: SnapshotHolder

    def request(self, method: str, path: str, body: Any = None, key: Optional[str] = None,
                headers: Optional[dict] = None, source: Optional[str] = None) -> tuple[int, dict, Any]:
        """(status, headers, parsed JSON or text) of one request (sent from the local address
        ``source``, e.g. ``127.0.0.2``, when given)."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=60,
                                          source_address=(source, 0) if source else None)
        h = dict(headers or {})
        if key:
            h["Authorization"] = f"Bearer {key}"
        data = None
        if body is not None:
            data = body if isinstance(body, (bytes, str)) else json.dumps(body)
            h["Content-Type"] = "application/json"
        try:
            conn.request(method, path, body=data, headers=h)
            r = conn.getresponse()
            raw = r.read().decode("utf-8")
            hdrs = {k.lower(): v for k, v in r.getheaders()}
        finally:
            conn.close()
        return r.status, hdrs, json_or_text(raw)

    def sse(self, path: str, body: Any, key: str) -> Iterator[dict]:
        """The ``data:`` events of a streamed POST, parsed, as they arrive (``[DONE]`` ends)."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
        conn.request("POST", path, body=json.dumps(body),
                     headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
        r = conn.getresponse()
        assert r.status == 200, r.read()
        try:
            while True:
                line = r.fp.readline()
                if not line:
                    return
                line = line.decode("utf-8").strip()
                if not line.startswith("data: "):
                    continue
                payload = line[len("data: "):]
                if payload == "[DONE]":
                    return
                yield json.loads(payload)
        finally:
            conn.close()


@contextmanager
def serve_index(index: str, config, *, keys: dict = KEYS, jwt: Optional[JWTSettings] = None,
                rate_limit: str = "1000/minute", poll_s: float = 0.0,
                corpus: Optional[str] = None) -> Iterator[LiveServer]:
    """Serve ``index`` with ``config`` on a real uvicorn server until the block ends (its
    documents from ``corpus`` when given)."""
    holder = SnapshotHolder(index, lambda i, emb: open_snapshot(i, config, emb), poll_s=poll_s)
    app = create_app(holder, Authenticator(KeysFile.model_validate(keys), jwt), RateLimiter(rate_limit),
                     corpus=corpus)
    with uvicorn_in_thread(app) as port:
        yield LiveServer(f"http://127.0.0.1:{port}", "127.0.0.1", port, app, holder)


@contextmanager
def uvicorn_in_thread(app, name: str = "vdgr-test-server") -> Iterator[int]:
    """Run ASGI ``app`` on a real uvicorn server on 127.0.0.1 in a thread, configured as the
    commands configure it (:func:`runners.serve.startup.uvicorn_config`); yields its port once
    it listens (waits at most 60 s) and stops it when the block ends."""
    server = uvicorn.Server(uvicorn_config(app, "127.0.0.1", 0, "warning", lifespan="on"))
    thread = threading.Thread(target=server.run, name=name, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:            # wait for the socket (bounded)
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"{name}: the test server did not start")
        time.sleep(0.02)
    try:
        yield server.servers[0].sockets[0].getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(timeout=30)
