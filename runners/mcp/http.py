"""Streamable HTTP for ``vdgr mcp``: the MCP endpoint behind the guard of ``vdgr serve``.

The SDK's Starlette application sits behind the same two layers as ``vdgr serve``'s routes
(:func:`http_app`): :class:`runners.serve.edge.Edge` (the client address behind
``--trusted-proxies``, security headers, access log without query strings) and
:class:`runners.serve.guard.RequestGuard` with the same :class:`runners.serve.guard.ServeLimits`
(``--allowed-hosts``, ``--max-body-bytes``, ``--body-timeout``, ``--auth-failures-per-minute``).
Every request needs ``Authorization: Bearer <key or JWT>``, checked by the same
:class:`runners.serve.auth.Authenticator` before the MCP SDK sees the request; the caller it
resolves is put in the request's ASGI scope, and the tools read their groups from there
(:func:`caller_of_request`), never from the tool arguments. Refusals are the service's: 401
for a missing or invalid credential (only a presented credential counts toward the address's
lockout), 429 with ``Retry-After``, 413, 408, 400, in the service's error envelope. The
transport is stateless (no MCP session outlives its request), so no session can be taken over
with another credential.
"""
from __future__ import annotations

from typing import Optional

from mcp.server.mcpserver import Context
from mcp.server.transport_security import TransportSecuritySettings

from runners.serve.auth import AuthFailureLimiter, Authenticator, Caller, RateLimiter
from runners.serve.edge import Edge
from runners.serve.errors import install_handlers
from runners.serve.guard import CALLER_KEY, RequestGuard, ServeLimits

PATH = "/mcp"


def caller_of_request(ctx: Context) -> Caller:
    """The authenticated caller of the HTTP request a tool call arrived in."""
    request = ctx.request_context.request
    caller = (getattr(request, "scope", None) or {}).get(CALLER_KEY)
    if not isinstance(caller, Caller):           # never reached behind the guard
        raise PermissionError("unauthenticated request")
    return caller


def _transport_security(limits: ServeLimits) -> TransportSecuritySettings:
    """The SDK's own Host and Origin checks, on the hosts the guard answers: the guard refuses
    any other Host first (400); a browser page of another origin gets the SDK's 403."""
    if "*" in limits.allowed_hosts:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    hosts, origins = [], []
    for host in limits.allowed_hosts:
        if host.startswith("*"):            # a domain pattern: the SDK matches exact names only
            return TransportSecuritySettings(enable_dns_rebinding_protection=False)
        name = f"[{host}]" if ":" in host else host
        hosts += [name, f"{name}:*"]
        origins += [f"{scheme}://{name}{port}" for scheme in ("http", "https") for port in ("", ":*")]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                     allowed_origins=origins)


def http_app(server, auth: Authenticator, limiter: RateLimiter, failures: Optional[AuthFailureLimiter] = None,
             limits: Optional[ServeLimits] = None):
    """The ASGI application serving ``server`` (an MCPServer) at :data:`PATH`, guarded.

    Parameters
    ----------
    server : MCPServer
    auth : Authenticator
    limiter : RateLimiter
        Per-key request limits.
    failures : AuthFailureLimiter, optional
        Failed authentications per client address; by default one of
        ``limits.auth_failures_per_minute``.
    limits : ServeLimits, optional
        The guard's settings (the defaults of ``vdgr serve`` when omitted).
    """
    limits = limits or ServeLimits()
    app = server.streamable_http_app(streamable_http_path=PATH, stateless_http=True,
                                     max_request_body_size=limits.max_body_bytes,
                                     transport_security=_transport_security(limits))
    app.router.redirect_slashes = False          # no redirect built from the Host header
    install_handlers(app)                        # 404, 405, 500 in the service's envelope
    guarded = RequestGuard(app, auth=auth, limiter=limiter,
                           failures=failures or AuthFailureLimiter(limits.auth_failures_per_minute),
                           limits=limits, protected=("/",), json_routes=frozenset({("POST", PATH)}))
    return Edge(guarded, limits.proxies)


__all__ = ["PATH", "caller_of_request", "http_app"]
