"""The FastAPI application of ``vdgr serve`` (see docs/SERVICE.md).

Endpoints: ``POST /v1/query`` (one query item -> the DESIGN.md result), ``POST
/v1/chat/completions`` (OpenAI-compatible, model ``vdgr``, streamed or not), ``GET /v1/models``,
``GET /v1/domains`` (the domains and versions the caller can read), ``GET /healthz``, ``GET
/metrics`` (Prometheus) and the search page ``GET /``.

Every ``/v1`` call needs ``Authorization: Bearer <key or JWT>``; the caller's groups come from
the credential, never from the body. Errors are OpenAI-style JSON ``{"error": {"message",
"type", "code"}}``: 401 (credential), 400 (body), 429 (rate limit, with ``Retry-After``).
Queries run in the server's thread pool, one at a time per index snapshot; each request uses
the snapshot current when it arrived (response header ``X-VDGR-Build-Id``).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from importlib import resources
from typing import Optional

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from schemas.errors import VdgrError
from runners.serve.auth import Authenticator, AuthError, Caller, RateLimited, RateLimiter
from runners.serve.chat import MODEL, ChatRequest, checked_llm_stream, completion_body, sse_events
from runners.serve.metrics import ServiceMetrics
from runners.serve.snapshot import Snapshot, SnapshotHolder
from vdgr_core.query.result import QueryResult

BUILD_HEADER = "X-VDGR-Build-Id"


class QueryBody(BaseModel):
    """``POST /v1/query``: one query item. Groups are not accepted: they come from the credential."""

    model_config = ConfigDict(extra="forbid")
    question: str = Field(min_length=1, max_length=4000)
    id: Optional[str] = Field(default=None, max_length=200)
    domain: Optional[str] = Field(default=None, max_length=256)
    version: Optional[str] = Field(default=None, max_length=128)
    k: Optional[int] = Field(default=None, ge=1, le=50)


class ApiError(Exception):
    """An error answered as ``{"error": {...}}`` with ``status``."""

    def __init__(self, status: int, message: str, kind: str, headers: Optional[dict] = None):
        super().__init__(message)
        self.status, self.message, self.kind, self.headers = status, message, kind, headers or {}


def _error(status: int, message: str, kind: str, headers: Optional[dict] = None) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": kind, "code": status}}, status_code=status,
                        headers=headers)


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
    """ASGI middleware: count requests and time them (until the response starts) per route."""

    def __init__(self, app, metrics: ServiceMetrics):
        self.app, self.metrics = app, metrics

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        t0 = time.perf_counter()
        status = {"code": 500}

        async def send_wrapped(message):
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
                route = scope.get("route")
                endpoint = getattr(route, "path", "other")
                self.metrics.latency.labels(endpoint=endpoint).observe(time.perf_counter() - t0)
                self.metrics.requests.labels(endpoint=endpoint, status=str(message["status"])).inc()
            await send(message)

        await self.app(scope, receive, send_wrapped)


def _page() -> str:
    return resources.files("runners.serve").joinpath("static/index.html").read_text(encoding="utf-8")


def create_app(holder: SnapshotHolder, auth: Authenticator, limiter: RateLimiter,
               metrics: Optional[ServiceMetrics] = None) -> FastAPI:
    """The application over ``holder``'s snapshots.

    Parameters
    ----------
    holder : SnapshotHolder
        The knowledge base being served (its background reload thread is started and stopped
        with the application).
    auth : Authenticator
    limiter : RateLimiter
    metrics : ServiceMetrics, optional
        A fresh registry when omitted.
    """
    metrics = metrics or ServiceMetrics()
    svc = Service(holder, auth, limiter, metrics)
    metrics.serving(holder.current().build_id, reload=False)
    holder.subscribe(lambda snap: metrics.serving(snap.build_id, reload=True))
    page = _page()

    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def lifespan(_app):
        holder.start()
        try:
            yield
        finally:
            holder.stop()

    app = FastAPI(title="VDGR", version="0.1.0", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.service = svc
    app.add_middleware(_Metrics, metrics=metrics)

    @app.exception_handler(ApiError)
    async def _api_error(_request, exc: ApiError):
        return _error(exc.status, exc.message, exc.kind, exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _bad_body(_request, exc: RequestValidationError):
        problems = []
        for e in exc.errors():
            loc = ".".join(str(x) for x in e.get("loc", ()) if x != "body") or "body"
            msg = e.get("msg", "invalid")
            if e.get("type") == "extra_forbidden" and loc == "groups":
                msg = "not accepted: the caller's groups come from its credential"
            problems.append(f"{loc}: {msg}")
        return _error(400, "invalid request body: " + "; ".join(problems), "invalid_request_error")

    def caller(request: Request) -> Caller:
        try:
            who = svc.auth.authenticate(request.headers.get("authorization"))
        except AuthError as exc:
            raise ApiError(401, str(exc), "authentication_error", {"WWW-Authenticate": "Bearer"}) from None
        try:
            svc.limiter.hit(who)
        except RateLimited as exc:
            raise ApiError(429, str(exc), "rate_limit_error", {"Retry-After": str(exc.retry_after)}) from None
        return who

    def run_query(who: Caller, body: QueryBody, **kw) -> tuple[QueryResult, Snapshot]:
        try:
            return svc.query(who, body, **kw)
        except (ValueError, VdgrError) as exc:
            raise ApiError(400, str(exc), "invalid_request_error") from None

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index_page():
        return HTMLResponse(page)

    @app.get("/healthz")
    def healthz():
        snap = holder.current()
        return {"status": "ok", "build_id": snap.build_id, "reloads": holder.reloads,
                "reload_failures": holder.reload_failures}

    @app.get("/metrics", include_in_schema=False)
    def prometheus():
        return Response(metrics.render(), media_type=metrics.content_type)

    @app.get("/v1/models")
    def models(who: Caller = Depends(caller)):
        return {"object": "list", "data": [{"id": MODEL, "object": "model", "created": 0, "owned_by": "vdgr"}]}

    @app.get("/v1/domains")
    def domains(response: Response, who: Caller = Depends(caller)):
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

    @app.post("/v1/query")
    def query(body: QueryBody, response: Response, who: Caller = Depends(caller)):
        result, snap = run_query(who, body)
        response.headers[BUILD_HEADER] = snap.build_id
        return result.model_dump(mode="json")

    @app.post("/v1/chat/completions")
    def chat(body: ChatRequest, who: Caller = Depends(caller)):
        if body.model != MODEL:
            raise ApiError(400, f"model {body.model!r} is not served here; use {MODEL!r}", "invalid_request_error")
        try:
            question = body.question()
            item = QueryBody(question=question, domain=body.domain, version=body.version, k=body.k)
        except ValueError as exc:
            raise ApiError(400, str(exc).splitlines()[0], "invalid_request_error") from None
        created = int(time.time())
        streamed_llm = body.stream and holder.current().answer_llm is not None
        result, snap = run_query(who, item, with_answer=not streamed_llm)
        headers = {BUILD_HEADER: snap.build_id}
        if not body.stream:
            return JSONResponse(completion_body(result, created), headers=headers)
        if snap.answer_llm is None:
            pieces = iter([result.answer])
        else:
            pieces = checked_llm_stream(result, snap, metrics)
        t0 = time.perf_counter()
        events = sse_events(result, pieces, created,
                            on_done=lambda: metrics.stream.observe(time.perf_counter() - t0))
        return StreamingResponse(events, media_type="text/event-stream",
                                 headers={**headers, "Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    return app
