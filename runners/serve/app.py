"""The FastAPI application of ``vdgr serve`` (see docs/SERVICE.md).

Endpoints: ``POST /v1/query`` (one query item -> the DESIGN.md result), ``POST
/v1/chat/completions`` (OpenAI-compatible, model ``vdgr``, streamed or not), ``GET /v1/models``,
``GET /v1/domains`` (the domains and versions the caller can read), ``GET /v1/documents/{id}``
(a document's source file, for a reader of it: :mod:`runners.serve.documents`), ``GET
/healthz``, ``GET /metrics`` (Prometheus) and the search page ``GET /`` (with its script
``/page.js`` and style sheet ``/page.css``: the page's policy allows no inline code).

The whole application, error pages included, sits inside :class:`runners.serve.edge.Edge`
(client address behind ``--trusted-proxies``, security headers, access log without query
strings); no redirect is ever built (a trailing slash is a 404, never a redirect to the
``Host`` the client named).

Every ``/v1`` call needs ``Authorization: Bearer <key or JWT>``; the caller's groups come from
the credential, never from the body. The credential is checked from the headers before the body
is read, and the body is bounded in size and time (:mod:`runners.serve.guard`). Every error is
one envelope (:mod:`runners.serve.errors`): ``{"error": {"type", "message", "field"?}}``, or
OpenAI's ``{"error": {"message", "type", "param", "code"}}`` on the OpenAI-compatible routes.
Request bodies are validated strictly (no type coercion, unknown fields refused).
Queries run in the server's thread pool, one at a time per index snapshot; each request uses
the snapshot current when it arrived (response header ``X-VDGR-Build-Id``).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from importlib import resources
from typing import Optional

from fastapi import Depends, FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from schemas.errors import VdgrError
from runners.serve.auth import AuthFailureLimiter, Authenticator, Caller, RateLimiter
from runners.serve.documents import DocumentSource
from runners.serve.chat import MODEL, QUESTION_MAX, ChatRequest, completion_body, sse_events, streamed_answer
from runners.serve.edge import Edge
from runners.serve.errors import ApiError, describe, install_handlers
from runners.serve.guard import CALLER_KEY, RequestGuard, ServeLimits
from runners.serve.metrics import ServiceMetrics
from runners.serve.snapshot import Snapshot, SnapshotHolder
from vdgr_core.query.result import QueryResult

BUILD_HEADER = "X-VDGR-Build-Id"


class QueryBody(BaseModel):
    """``POST /v1/query``: one query item. Groups are not accepted: they come from the credential.

    Strict: no type coercion (``k: "5"`` and ``k: true`` are refused), unknown fields refused,
    and a question that is empty once trimmed is refused.
    """

    model_config = ConfigDict(extra="forbid", strict=True)
    question: str = Field(min_length=1, max_length=QUESTION_MAX)
    id: Optional[str] = Field(default=None, max_length=200)
    domain: Optional[str] = Field(default=None, max_length=256)
    version: Optional[str] = Field(default=None, max_length=128)
    k: Optional[int] = Field(default=None, ge=1, le=50)

    @field_validator("question")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("must not be empty once leading and trailing whitespace is removed")
        return v


@dataclass
class Service:
    """What the endpoints share."""

    holder: SnapshotHolder
    auth: Authenticator
    limiter: RateLimiter
    metrics: ServiceMetrics

    def query(self, caller: Caller, q: QueryBody, *, with_answer: bool = True) -> tuple[QueryResult, Snapshot]:
        """Run one query on the current snapshot (taken once) with the caller's groups."""
        snap = self.holder.current()
        llm = snap.kb.llm
        with snap.lock:
            before = llm.usage() if llm is not None else {}
            try:
                result = snap.kb.query(q.question, domain=q.domain, version=q.version, groups=caller.groups,
                                       k=q.k, qid=q.id, with_answer=with_answer)
            finally:
                if llm is not None:
                    self.metrics.add_llm_usage(before, llm.usage())
        return result, snap


class _Metrics:
    """ASGI middleware: count requests and time them (until the response starts) per route.

    A request refused before routing is counted under its path when that is a route's path
    (``paths``), else under ``other``; an exception that escapes the routes counts as a 500.
    """

    def __init__(self, app, metrics: ServiceMetrics, paths: frozenset = frozenset()):
        self.app, self.metrics, self.paths = app, metrics, paths

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        t0 = time.perf_counter()
        started = False

        def count(status: int) -> None:
            route = scope.get("route")
            endpoint = getattr(route, "path", None) or (scope["path"] if scope["path"] in self.paths else "other")
            self.metrics.latency.labels(endpoint=endpoint).observe(time.perf_counter() - t0)
            self.metrics.requests.labels(endpoint=endpoint, status=str(status)).inc()

        async def send_wrapped(message):
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                count(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_wrapped)
        except Exception:
            if not started:
                count(500)
            raise


#: the search page's policy: its script and style sheet from this origin, requests to it, nothing
#: inline, never framed (a source document opened from a blob inherits it; Chromium's PDF
#: viewer still shows a PDF under it)
PAGE_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
            "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")


def _static(name: str) -> str:
    return resources.files("runners.serve").joinpath(f"static/{name}").read_text(encoding="utf-8")


class _GuardedApp(FastAPI):
    """FastAPI with :class:`runners.serve.edge.Edge` around its whole middleware stack (so
    that error pages, 500s included, carry the security headers too)."""

    def build_middleware_stack(self):
        return Edge(super().build_middleware_stack(), self.state.limits.proxies)


def create_app(holder: SnapshotHolder, auth: Authenticator, limiter: RateLimiter,
               metrics: Optional[ServiceMetrics] = None, limits: Optional[ServeLimits] = None,
               failures: Optional[AuthFailureLimiter] = None, corpus: Optional[str] = None) -> FastAPI:
    """The application over ``holder``'s snapshots.

    Parameters
    ----------
    holder : SnapshotHolder
        The knowledge base being served (its background reload thread is started and stopped
        with the application).
    auth : Authenticator
    limiter : RateLimiter
        Per-key request limits.
    metrics : ServiceMetrics, optional
        A fresh registry when omitted.
    limits : ServeLimits, optional
        Body size and time, failed-authentication budget, trusted proxies, allowed hosts,
        OpenAPI; the defaults when omitted. The server must leave the client address alone
        (uvicorn: ``proxy_headers=False``, :func:`runners.serve.startup.uvicorn_config`).
    failures : AuthFailureLimiter, optional
        Failed authentications per client address; by default one of
        ``limits.auth_failures_per_minute`` on the monotonic clock (tests inject a clock).
    corpus : str, optional
        The corpus root the index was built from: ``GET /v1/documents/{id}`` serves its files
        (none when omitted; the manifest does not record the root).
    """
    metrics = metrics or ServiceMetrics()
    limits = limits or ServeLimits()
    failures = failures or AuthFailureLimiter(limits.auth_failures_per_minute)
    svc = Service(holder, auth, limiter, metrics)
    metrics.serving(holder.current().build_id, reload=False)
    holder.subscribe(lambda snap: metrics.serving(snap.build_id, reload=True))
    app = _new_app(holder, svc, limits)
    _add_page_routes(app, holder, metrics)
    _add_api_routes(app, svc, DocumentSource(corpus))
    # the guard runs inside the metrics (so its refusals are counted), both after the routes exist
    app.add_middleware(RequestGuard, auth=auth, limiter=limiter, failures=failures, limits=limits,
                       metrics=metrics)
    app.add_middleware(_Metrics, metrics=metrics, paths=frozenset(getattr(r, "path", "") for r in app.routes))
    return app


def _new_app(holder: SnapshotHolder, svc: Service, limits: ServeLimits) -> _GuardedApp:
    """The application without routes: ``holder``'s reload thread runs while it does, and the
    service's error envelope answers 404, 405 and 500."""
    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def lifespan(_app):
        holder.start()
        try:
            yield
        finally:
            holder.stop()

    app = _GuardedApp(title="VDGR", version="0.1.0", lifespan=lifespan, redoc_url=None,
                      openapi_url="/openapi.json" if limits.openapi else None,
                      docs_url="/docs" if limits.openapi else None, redirect_slashes=False)
    app.state.service = svc
    app.state.limits = limits
    install_handlers(app)
    return app


def _add_page_routes(app: FastAPI, holder: SnapshotHolder, metrics: ServiceMetrics) -> None:
    """The search page and its script and style, the health check and the Prometheus metrics."""
    page, script, style = _static("index.html"), _static("page.js"), _static("page.css")

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index_page():
        return HTMLResponse(page, headers={"Content-Security-Policy": PAGE_CSP, "Cache-Control": "no-cache"})

    @app.get("/page.js", include_in_schema=False)
    def page_script():
        return Response(script, media_type="text/javascript; charset=utf-8", headers={"Cache-Control": "no-cache"})

    @app.get("/page.css", include_in_schema=False)
    def page_style():
        return Response(style, media_type="text/css; charset=utf-8", headers={"Cache-Control": "no-cache"})

    @app.get("/healthz")
    def healthz():
        snap = holder.current()
        return {"status": "ok", "build_id": snap.build_id, "reloads": holder.reloads,
                "reload_failures": holder.reload_failures}

    @app.get("/metrics", include_in_schema=False)
    def prometheus():
        return Response(metrics.render(), media_type=metrics.content_type)


async def _caller(request: Request) -> Caller:
    """The caller :class:`RequestGuard` authenticated from the headers, before the body."""
    who = request.scope.get(CALLER_KEY)
    if who is None:     # the guard authenticates every /v1/ request; anything else fails closed
        raise ApiError(401, "missing credential", headers={"WWW-Authenticate": "Bearer"})
    return who


def _chat_query(body: ChatRequest) -> QueryBody:
    """The query a chat request asks (its last user message), validated as ``/v1/query``'s."""
    if body.model != MODEL:
        raise ApiError(400, f"model: not served here; the one model is {MODEL!r}", field="model")
    try:
        question = body.question()
    except ValueError as exc:
        raise ApiError(400, f"invalid request body: {exc}", field="messages") from None
    if len(question) > QUESTION_MAX:
        raise ApiError(400, f"invalid request body: messages: the question (the last user message) has "
                            f"{len(question)} characters; the limit is {QUESTION_MAX}", field="messages")
    try:
        return QueryBody.model_validate({"question": question, "domain": body.domain,
                                         "version": body.version, "k": body.k})
    except ValidationError as exc:
        message, field = describe(exc.errors(), rename={"question": "messages"})
        raise ApiError(400, "invalid request body: " + message, field=field) from None


def _add_api_routes(app: FastAPI, svc: Service, documents: DocumentSource) -> None:
    """``/v1/``: models, domains, documents, query and the OpenAI-compatible chat."""
    holder, metrics = svc.holder, svc.metrics

    def run_query(who: Caller, body: QueryBody, **kw) -> tuple[QueryResult, Snapshot]:
        try:
            return svc.query(who, body, **kw)
        except (ValueError, VdgrError) as exc:
            raise ApiError(400, str(exc)) from None

    @app.get("/v1/models")
    def models(who: Caller = Depends(_caller)):
        return {"object": "list", "data": [{"id": MODEL, "object": "model", "created": 0, "owned_by": "vdgr"}]}

    @app.get("/v1/domains")
    def domains(response: Response, who: Caller = Depends(_caller)):
        """The domains (with versions) holding content the caller may read."""
        snap = holder.current()
        response.headers[BUILD_HEADER] = snap.build_id
        out = []
        with snap.lock:
            visible = snap.kb.visible(who.groups)
            for info in snap.kb.reader.manifest.domains:
                if visible.has(info.name):
                    out.append({"name": info.name, "description": info.description,
                                "versions": list(visible.versions[info.name])})
        return {"domains": out}

    @app.get("/v1/documents/{doc_id}")
    def document(doc_id: str, who: Caller = Depends(_caller)):
        """The source file of an indexed document the caller may read (404 alike otherwise)."""
        snap = holder.current()
        served = documents.fetch(snap.kb.reader, doc_id, who.groups)
        return Response(served.body, media_type=served.media_type,
                        headers={**served.headers, BUILD_HEADER: snap.build_id})

    @app.post("/v1/query")
    def query(body: QueryBody, response: Response, who: Caller = Depends(_caller)):
        result, snap = run_query(who, body)
        response.headers[BUILD_HEADER] = snap.build_id
        return result.model_dump(mode="json")

    @app.post("/v1/chat/completions")
    def chat(body: ChatRequest, who: Caller = Depends(_caller)):
        item = _chat_query(body)
        created = int(time.time())
        # a stream retrieves first, then streams the knowledge base's answer stage
        result, snap = run_query(who, item, with_answer=not body.stream)
        headers = {BUILD_HEADER: snap.build_id}
        if not body.stream:
            return JSONResponse(completion_body(result, created), headers=headers)
        pieces = streamed_answer(result, snap, metrics)
        t0 = time.perf_counter()
        events = sse_events(result, pieces, created,
                            on_done=lambda: metrics.stream.observe(time.perf_counter() - t0))
        return StreamingResponse(events, media_type="text/event-stream",
                                 headers={**headers, "Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
