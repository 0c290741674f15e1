"""Streamable HTTP for ``vdgr mcp``: the MCP endpoint behind the credentials of ``vdgr serve``.

Every request to ``/mcp`` needs ``Authorization: Bearer <key or JWT>``, checked by the same
:class:`runners.serve.auth.Authenticator` (keys file, JWT settings) before the MCP SDK sees the
request; the caller it resolves is put in the request's ASGI scope, and the tools read their
groups from there (:func:`caller_of_request`), never from the tool arguments. A missing or
invalid credential is a 401, a spent per-caller rate limit or too many failed authentications
from one address a 429 with ``Retry-After``, as on ``/v1``. The transport is stateless (no MCP
session outlives its request), so no session can be taken over with another credential.
"""
from __future__ import annotations

import json
from typing import Optional

from mcp.server.mcpserver import Context

from runners.serve.auth import AuthError, AuthFailureLimiter, Authenticator, Caller, RateLimited, RateLimiter

CALLER_KEY = "vdgr_caller"
PATH = "/mcp"


def caller_of_request(ctx: Context) -> Caller:
    """The authenticated caller of the HTTP request a tool call arrived in."""
    request = ctx.request_context.request
    caller = (getattr(request, "scope", None) or {}).get("state", {}).get(CALLER_KEY)
    if not isinstance(caller, Caller):           # never reached behind Authenticated
        raise PermissionError("unauthenticated request")
    return caller


class Authenticated:
    """ASGI middleware: authenticate every HTTP request, then pass it on with its caller."""

    def __init__(self, app, auth: Authenticator, limiter: RateLimiter, failures: AuthFailureLimiter):
        self.app, self.auth, self.limiter, self.failures = app, auth, limiter, failures

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        client = (scope.get("client") or ("unknown", 0))[0]
        try:
            self.failures.check(client)
            try:
                caller = self.auth.authenticate(headers.get("authorization"))
            except AuthError:
                self.failures.failed(client)
                raise
            self.limiter.hit(caller)
        except AuthError as exc:
            await _error(send, 401, "authentication_error", str(exc), {"WWW-Authenticate": "Bearer"})
            return
        except RateLimited as exc:
            await _error(send, 429, "rate_limit_error", str(exc), {"Retry-After": str(exc.retry_after)})
            return
        scope.setdefault("state", {})[CALLER_KEY] = caller
        await self.app(scope, receive, send)


async def _error(send, status: int, kind: str, message: str, extra: dict[str, str]) -> None:
    """The error envelope of the service: ``{"error": {"type", "message"}}``."""
    body = json.dumps({"error": {"type": kind, "message": message}}).encode("utf-8")
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
               *((k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in extra.items())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def http_app(server, auth: Authenticator, limiter: RateLimiter, failures: Optional[AuthFailureLimiter] = None,
             host: str = "127.0.0.1"):
    """The ASGI application serving ``server`` (an MCPServer) at :data:`PATH`, authenticated."""
    app = server.streamable_http_app(streamable_http_path=PATH, stateless_http=True, host=host)
    return Authenticated(app, auth, limiter, failures or AuthFailureLimiter(30))


__all__ = ["Authenticated", "CALLER_KEY", "PATH", "caller_of_request", "http_app"]
