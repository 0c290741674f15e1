"""Bounded work per request before it is trusted: the ASGI middleware in front of the routes.

The same guard stands in front of ``vdgr serve`` (its ``/v1/`` routes) and of ``vdgr mcp
--transport http`` (every path), inside :class:`runners.serve.edge.Edge`, which resolved the
client address. For every HTTP request, before any route runs, :class:`RequestGuard`

1. refuses a ``Host`` header that is not one of :attr:`ServeLimits.allowed_hosts` with 400
   (DNS rebinding), and a request whose trusted proxy sent forwarding headers naming two
   different clients with 400;
2. authenticates a protected request (``protected`` path prefixes) from its headers
   (``Authorization``), before a byte of its body is read: a client address over its
   failed-authentication budget gets 429 (:class:`runners.serve.auth.AuthFailureLimiter`), an
   unknown credential 401, a key over its rate limit 429; the caller is left in the ASGI scope
   (:data:`CALLER_KEY`). A request without any credential gets 401 and is neither counted
   nor blocked (it guesses nothing);
3. refuses a declared ``Content-Length`` above :attr:`ServeLimits.max_body_bytes` with 413
   without reading the body;
4. reads the body (declared or chunked) counting bytes, and stops with 413 at the cap or with
   408 when it has not arrived within :attr:`ServeLimits.body_timeout_s` of the request;
5. for the JSON routes, refuses a body that is not UTF-8 or nests deeper than
   :attr:`ServeLimits.max_json_depth` with 400;

and hands the routes the body it read. A refusal sent before the body was read whole closes
the connection (``Connection: close``), so the server never drains the rest. Every refusal is
counted in ``vdgr_refused_requests_total{reason}`` (when the application has metrics) and
answered in the error envelope (:mod:`runners.serve.errors`), whose message never echoes the
request.
"""
from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import Optional

import numpy as np
from starlette.datastructures import Headers

from runners.serve.auth import AuthError, AuthFailureLimiter, Authenticator, Caller, RateLimited, RateLimiter
from runners.serve.edge import FORWARDED_PROBLEM_KEY, TrustedProxies
from runners.serve.errors import ApiError, error_response
from runners.serve.metrics import ServiceMetrics

#: ASGI scope key of the authenticated :class:`Caller`
CALLER_KEY = "vdgr.caller"
#: routes of ``vdgr serve`` whose bodies are JSON documents (UTF-8 and depth checked here)
JSON_ROUTES = frozenset({("POST", "/v1/query"), ("POST", "/v1/chat/completions")})
#: the hosts a server bound to 127.0.0.1 answers by default
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")


def default_allowed_hosts(bound: str) -> tuple[str, ...]:
    """``--allowed-hosts`` when none is given: the bound host and the names of localhost."""
    return tuple(dict.fromkeys(h for h in (_host_name(bound), *LOCAL_HOSTS) if h))


def _host_name(value: str) -> str:
    """The host of a ``Host`` header value or a bound address: lowercase, without port or
    IPv6 brackets (``[::1]:8080`` -> ``::1``)."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else ""
    if value.count(":") == 1:
        return value.split(":", 1)[0]
    return value


def host_allowed(header: Optional[str], allowed: tuple[str, ...]) -> bool:
    """True when the ``Host`` header names an allowed host (``*`` allows any, ``*.example.com``
    any name below example.com; the port is not compared)."""
    if "*" in allowed:
        return True
    host = _host_name(header or "")
    if not host:
        return False
    return any(host == pattern or (pattern.startswith("*.") and host.endswith(pattern[1:])) for pattern in allowed)


@dataclass(frozen=True)
class ServeLimits:
    """What one request may cost before and while it is trusted (``vdgr serve`` flags).

    Parameters
    ----------
    max_body_bytes : int
        ``--max-body-bytes``: the largest request body, declared or streamed (1 MiB).
    body_timeout_s : float
        ``--body-timeout``: seconds from the request's headers to its body's last byte (10).
    max_json_depth : int
        Nesting depth of a JSON body (64; a chat request with tools needs about 10).
    auth_failures_per_minute : int
        ``--auth-failures-per-minute``: failed authentications per client address (30; 0: off).
    openapi : bool
        ``--openapi``: serve ``/openapi.json`` and ``/docs`` (off).
    trusted_proxies : tuple of str
        ``--trusted-proxies``: addresses or CIDR blocks of the proxies whose ``X-Forwarded-For``
        and ``Forwarded`` are believed (none).
    allowed_hosts : tuple of str
        ``--allowed-hosts``: the ``Host`` names answered (the bound host and localhost;
        ``*.example.com`` a domain's names, ``*`` any); any other gets 400.
    """

    max_body_bytes: int = 1 << 20
    body_timeout_s: float = 10.0
    max_json_depth: int = 64
    auth_failures_per_minute: int = 30
    openapi: bool = False
    trusted_proxies: tuple[str, ...] = ()
    allowed_hosts: tuple[str, ...] = default_allowed_hosts("127.0.0.1")

    def __post_init__(self):
        if self.max_body_bytes < 1:
            raise ValueError("--max-body-bytes must be at least 1")
        if not self.body_timeout_s > 0:
            raise ValueError("--body-timeout must be more than 0 seconds")
        if self.max_json_depth < 2:
            raise ValueError("max_json_depth must be at least 2")
        if self.auth_failures_per_minute < 0:
            raise ValueError("--auth-failures-per-minute must be 0 (off) or more")
        TrustedProxies(self.trusted_proxies)          # raises on an entry that is no network
        if not self.allowed_hosts:
            raise ValueError("--allowed-hosts must name at least one host")
        for pattern in self.allowed_hosts:
            if pattern != "*" and ("*" in pattern[2:] or (pattern.startswith("*") and not pattern.startswith("*."))
                                   or not _host_name(pattern)):
                raise ValueError(f"--allowed-hosts: {pattern!r} is not a host name, an address, "
                                 f"'*.domain' or '*'")
        object.__setattr__(self, "allowed_hosts", tuple(p if p.startswith("*") else _host_name(p)
                                                        for p in self.allowed_hosts))

    @property
    def proxies(self) -> TrustedProxies:
        """:attr:`trusted_proxies`, parsed."""
        return TrustedProxies(self.trusted_proxies)


class _Refused(Exception):
    def __init__(self, reason: str, error: ApiError):
        super().__init__(error.message)
        self.reason, self.error = reason, error


class _Disconnected(Exception):
    pass


_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def json_depth(text: str) -> int:
    """The deepest nesting of arrays and objects in JSON ``text`` (strings skipped).

    Malformed text gives some number; the JSON parser reports what is wrong with it.
    """
    if text.count("[") + text.count("{") < 2:
        return text.count("[") + text.count("{")
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    if not brackets:
        return 0
    b = np.frombuffer(brackets.encode("ascii"), dtype=np.uint8)
    step = np.where((b == ord("[")) | (b == ord("{")), 1, -1)
    return int(np.cumsum(step).max())


class RequestGuard:
    """ASGI middleware: host, authentication from headers, then a bounded body (module docstring).

    Parameters
    ----------
    app : ASGI application
    auth : Authenticator
    limiter : RateLimiter
        Per-key request limits.
    failures : AuthFailureLimiter
        Failed authentications per client address (``scope["client"]``, as
        :class:`runners.serve.edge.Edge` resolved it).
    limits : ServeLimits
    metrics : ServiceMetrics, optional
        Where refusals are counted (none: not counted).
    protected : tuple of str
        Path prefixes that need a credential (``("/v1/",)`` for ``vdgr serve``, ``("/",)``
        for the MCP endpoint: every path).
    json_routes : frozenset of (method, path)
        Routes whose bodies are JSON documents (:data:`JSON_ROUTES` for ``vdgr serve``).
    """

    def __init__(self, app, *, auth: Authenticator, limiter: RateLimiter, failures: AuthFailureLimiter,
                 limits: ServeLimits, metrics: Optional[ServiceMetrics] = None,
                 protected: tuple[str, ...] = ("/v1/",), json_routes: frozenset = JSON_ROUTES):
        self.app, self.auth, self.limiter, self.failures = app, auth, limiter, failures
        self.limits, self.metrics = limits, metrics
        self.protected, self.json_routes = protected, json_routes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path, method = scope["path"], scope["method"]
        headers = Headers(scope=scope)
        has_body = "transfer-encoding" in headers or headers.get("content-length", "0").strip() not in ("", "0")
        complete = not has_body
        try:
            self._check_headers(scope, headers)
            length = self._declared_length(headers)
            if path.startswith(self.protected):
                scope[CALLER_KEY] = self._authenticate(scope, headers)
            if length is not None and length > self.limits.max_body_bytes:
                raise _Refused("body_too_large", ApiError(
                    413, f"body: {length} bytes declared; the limit is {self.limits.max_body_bytes} bytes "
                         f"(--max-body-bytes)", field="body"))
            if has_body:
                body = await self._read_body(receive)
                complete = True
                if (method, path) in self.json_routes:
                    self._check_json(body)
                receive = _replay(body, receive)
        except _Refused as refused:
            if self.metrics is not None:
                self.metrics.refused.labels(reason=refused.reason).inc()
            await error_response(path, refused.error, close=not complete)(scope, receive, send)
            return
        except _Disconnected:
            return
        await self.app(scope, receive, send)

    def _check_headers(self, scope, headers: Headers) -> None:
        if not host_allowed(headers.get("host"), self.limits.allowed_hosts):
            raise _Refused("bad_host", ApiError(
                400, "Host: not a name this server answers to (--allowed-hosts)", field="Host"))
        problem = scope.get(FORWARDED_PROBLEM_KEY)
        if problem:
            raise _Refused("bad_forwarded", ApiError(400, problem, field="Forwarded"))

    def _declared_length(self, headers: Headers) -> Optional[int]:
        raw = headers.get("content-length")
        if raw is None:
            return None
        try:
            value = int(raw)
        except ValueError:
            value = -1
        if value < 0:
            raise _Refused("bad_body", ApiError(400, "Content-Length: not a byte count", field="Content-Length"))
        return value

    def _authenticate(self, scope, headers: Headers) -> Caller:
        authorization = headers.get("authorization")
        client = (scope.get("client") or ("unknown", 0))[0]
        challenge = {"WWW-Authenticate": "Bearer"}
        if authorization:
            try:
                self.failures.check(client)
            except RateLimited as exc:
                raise _Refused("auth_blocked", ApiError(
                    429, str(exc), headers={"Retry-After": str(exc.retry_after)})) from None
        try:
            who = self.auth.authenticate(authorization)
        except AuthError as exc:
            if authorization:
                self.failures.failed(client)
            raise _Refused("auth_failed", ApiError(401, str(exc), headers=challenge)) from None
        try:
            self.limiter.hit(who)
        except RateLimited as exc:
            raise _Refused("rate_limited", ApiError(
                429, str(exc), headers={"Retry-After": str(exc.retry_after)})) from None
        return who

    async def _read_body(self, receive) -> bytes:
        cap, timeout = self.limits.max_body_bytes, self.limits.body_timeout_s
        chunks: list[bytes] = []
        total = 0
        try:
            async with asyncio.timeout(timeout):
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        raise _Disconnected()
                    chunk = message.get("body", b"")
                    total += len(chunk)
                    if total > cap:
                        raise _Refused("body_too_large", ApiError(
                            413, f"body: more than {cap} bytes sent; the limit is {cap} bytes (--max-body-bytes)",
                            field="body"))
                    if chunk:
                        chunks.append(chunk)
                    if not message.get("more_body", False):
                        return b"".join(chunks)
        except TimeoutError:
            raise _Refused("body_timeout", ApiError(
                408, f"body: not received whole within {timeout:g} s ({total} bytes arrived; --body-timeout)",
                field="body")) from None

    def _check_json(self, body: bytes) -> None:
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _Refused("bad_body", ApiError(
                400, f"invalid request body: body: not valid UTF-8 (byte {exc.start}); JSON bodies are UTF-8",
                field="body")) from None
        depth = json_depth(text)
        if depth > self.limits.max_json_depth:
            raise _Refused("bad_body", ApiError(
                400, f"invalid request body: body: JSON nested {depth} levels deep; the limit is "
                     f"{self.limits.max_json_depth}", field="body"))


def _replay(body: bytes, receive):
    """A ``receive`` that gives ``body`` whole once, then what the server sends (disconnect)."""
    given = False

    async def replay():
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
