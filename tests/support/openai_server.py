"""A real, scriptable HTTP server speaking the OpenAI wire format, for tests.

``ScriptedOpenAIServer`` listens on 127.0.0.1 (port 0, so the OS picks a free one) in a daemon
thread and answers ``POST /v1/chat/completions`` and ``POST /v1/embeddings``. The test scripts it
through ``.responder``: a callable taking the request JSON (with ``"_path"`` added) and
returning

- a ``str``: the assistant content of a chat completion (wrapped in a full response body);
- a ``dict``: the raw JSON body, sent with status 200;
- a ``(status, body)`` tuple: an error (or any) status with a dict or str body;
- a ``list``: the pieces of a streamed answer. A request with ``"stream": true`` is answered
  with Server-Sent Events, one ``chat.completion.chunk`` per piece (a ``str`` reply is split
  into words), a usage chunk when ``stream_options.include_usage`` is set, then ``[DONE]``. A
  callable piece is called (in the server thread) instead of being sent: a test can hold the
  stream at that point, e.g. with ``threading.Event().wait``.

Every request JSON is recorded in ``.requests``; ``.max_in_flight`` is the most requests that
were being answered at the same time.
"""
from __future__ import annotations

import hashlib
import json
import math
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Optional, Union

Reply = Union[str, dict, tuple, list]
Responder = Callable[[dict], Reply]


def chat_body(content: str, model: str = "test-model", prompt_tokens: int = 10,
              completion_tokens: int = 5) -> dict:
    """A complete ``chat.completion`` response body."""
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": "stop",
        }],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def chunk_body(content: Optional[str], model: str = "test-model", finish_reason: Optional[str] = None,
               usage: Optional[dict] = None) -> dict:
    """One ``chat.completion.chunk`` of a streamed answer (``usage`` only: the final usage chunk)."""
    choices = [] if usage is not None else [{
        "index": 0, "delta": ({"content": content} if content is not None else {}),
        "finish_reason": finish_reason}]
    body = {"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 0, "model": model,
            "choices": choices}
    if usage is not None:
        body["usage"] = usage
    return body


def stream_pieces(text: str) -> list[str]:
    """A text split into word pieces (each but the first with its leading space)."""
    words = text.split(" ")
    return [words[0]] + [" " + w for w in words[1:]] if words else []


def fake_vector(text: str, dim: int) -> list[float]:
    """A deterministic unit vector for ``text`` (sha256-seeded)."""
    raw = hashlib.sha256(text.encode("utf-8")).digest()
    vals = [((raw[i % len(raw)] + 7 * i) % 256) / 255.0 - 0.5 for i in range(dim)]
    norm = math.sqrt(sum(v * v for v in vals)) or 1.0
    return [v / norm for v in vals]


def embeddings_body(vectors: list[list[float]], model: str = "test-embed") -> dict:
    """A complete embeddings response body."""
    return {
        "object": "list",
        "data": [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)],
        "model": model,
        "usage": {"prompt_tokens": len(vectors), "total_tokens": len(vectors)},
    }


class ScriptedOpenAIServer:
    """OpenAI-compatible test server; use as a context manager or call start()/stop().

    Parameters
    ----------
    responder : callable, optional
        Initial responder; :meth:`default_responder` if None.
    embedding_dim : int, optional
        Dimension of the default responder's embeddings.
    """

    def __init__(self, responder: Optional[Responder] = None, embedding_dim: int = 8):
        self.embedding_dim = embedding_dim
        self.responder: Responder = responder or self.default_responder
        self.requests: list[dict] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.cond = threading.Condition()
        self._httpd: Optional[ThreadingHTTPServer] = None
        self._thread: Optional[threading.Thread] = None

    # ------------------------------------------------------------ lifecycle
    @property
    def url(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> "ScriptedOpenAIServer":
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
            name="openai-test-server", daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def __enter__(self) -> "ScriptedOpenAIServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------ scripting
    def default_responder(self, request: dict) -> Reply:
        """Chat: ``"OK"``; embeddings: deterministic unit vectors of ``embedding_dim``."""
        if request["_path"].endswith("/embeddings"):
            inputs = request.get("input")
            texts = [inputs] if isinstance(inputs, str) else list(inputs or [])
            return embeddings_body([fake_vector(str(t), self.embedding_dim) for t in texts])
        return "OK"

    def script(self, *replies: Reply) -> None:
        """Answer the next requests with ``replies`` in order, then with the last one."""
        queue = list(replies)
        lock = threading.Lock()

        def responder(_request: dict) -> Reply:
            with lock:
                return queue.pop(0) if len(queue) > 1 else queue[0]

        self.responder = responder

    def chat_requests(self) -> list[dict]:
        with self.cond:
            return [r for r in self.requests if r["_path"].endswith("/chat/completions")]

    # ------------------------------------------------------------ handling
    def _handle(self, path: str, request: dict) -> tuple[int, Any]:
        """(status, body); body is a list of pieces for a streamed answer."""
        request["_path"] = path
        with self.cond:
            self.requests.append(request)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self.cond.notify_all()
        try:
            reply = self.responder(request)
        except Exception as exc:  # a broken script shows up as a 500 carrying the error
            reply = (500, {"error": {"message": f"responder raised: {exc!r}", "type": "test"}})
        finally:
            with self.cond:
                self.in_flight -= 1
                self.cond.notify_all()
        if isinstance(reply, tuple):
            status, body = reply
            if isinstance(body, str):
                body = {"error": {"message": body, "type": "test_error", "code": status}}
            return int(status), body
        if request.get("stream") and isinstance(reply, (str, list)):
            return 200, stream_pieces(reply) if isinstance(reply, str) else list(reply)
        if isinstance(reply, list):
            reply = "".join(p for p in reply if isinstance(p, str))
        if isinstance(reply, str):
            return 200, chat_body(reply, model=str(request.get("model", "test-model")))
        return 200, reply

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out as two writes

            def log_message(self, *args: Any) -> None:  # keep pytest output clean
                pass

            def _send(self, status: int, body: Any) -> None:
                data = json.dumps(body).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:  # noqa: N802 (http.server naming)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b"{}"
                path = self.path.split("?", 1)[0].rstrip("/")
                if not (path.endswith("/chat/completions") or path.endswith("/embeddings")):
                    self._send(404, {"error": {"message": f"no route {path}", "type": "not_found"}})
                    return
                try:
                    request = json.loads(raw.decode("utf-8"))
                except ValueError:
                    self._send(400, {"error": {"message": "body is not JSON", "type": "bad_request"}})
                    return
                status, body = server._handle(path, request)
                if isinstance(body, list):
                    self._stream(body, request)
                else:
                    self._send(status, body)

            def _stream(self, pieces: list, request: dict) -> None:
                model = str(request.get("model", "test-model"))
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True

                def event(body: Any) -> None:
                    self.wfile.write(b"data: " + json.dumps(body).encode("utf-8") + b"\n\n")
                    self.wfile.flush()

                n = 0
                for piece in pieces:
                    if callable(piece):
                        piece()
                        continue
                    event(chunk_body(piece, model))
                    n += 1
                event(chunk_body(None, model, finish_reason="stop"))
                if (request.get("stream_options") or {}).get("include_usage"):
                    event(chunk_body(None, model, usage={"prompt_tokens": 10, "completion_tokens": n,
                                                         "total_tokens": 10 + n}))
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

        return Handler
