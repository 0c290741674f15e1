"""The outermost layer of every HTTP surface (``vdgr serve`` and ``vdgr mcp --transport http``).

:class:`Edge` wraps the whole application, error pages included, and for every HTTP request

1. resolves the client address (:class:`TrustedProxies`): the TCP peer, unless the peer is a
   proxy named by ``--trusted-proxies``, whose ``X-Forwarded-For`` and ``Forwarded`` headers are
   then read right to left and the right-most hop that is not a trusted proxy is the client.
   The address replaces ``scope["client"]``, so the failed-authentication limit
   (:mod:`runners.serve.guard`) and the access log key on it. Headers from any other peer are
   ignored: a client cannot choose the address it is counted under;
2. adds the security headers to every response (:data:`SECURITY_HEADERS`; a response without a
   ``Content-Security-Policy`` gets :data:`API_CSP`, one with a policy lacking
   ``frame-ancestors`` gets ``frame-ancestors 'none'`` appended);
3. writes one access-log line per response (logger ``vdgr.access``, uvicorn's access format)
   with the resolved address and the path without its query string, so a credential sent as
   ``?api_key=...`` never reaches the log.

It refuses nothing itself: a request whose two forwarding headers name different clients is
marked (:data:`FORWARDED_PROBLEM_KEY`) and refused by :class:`runners.serve.guard.RequestGuard`.
The server must not rewrite the client address itself: the runners start uvicorn with
``proxy_headers=False`` (:func:`runners.serve.startup.uvicorn_config`).
"""
from __future__ import annotations

import ipaddress
import logging
from typing import Iterable, Optional, Sequence, Union

_IP = Union[ipaddress.IPv4Address, ipaddress.IPv6Address]
_NET = Union[ipaddress.IPv4Network, ipaddress.IPv6Network]

#: ASGI scope key: why the forwarding headers of a trusted proxy could not be believed
FORWARDED_PROBLEM_KEY = "vdgr.forwarded_problem"
#: headers every response carries
SECURITY_HEADERS = (("x-content-type-options", "nosniff"), ("referrer-policy", "no-referrer"),
                    ("x-frame-options", "DENY"))
#: the policy of a response that sets none (JSON, server-sent events, errors)
API_CSP = "default-src 'none'; frame-ancestors 'none'"

access_log = logging.getLogger("vdgr.access")


class ForwardedConflict(ValueError):
    """``X-Forwarded-For`` and ``Forwarded`` of a trusted proxy name different clients."""


def _address(text: str) -> Optional[_IP]:
    """The IP address of one hop (``1.2.3.4``, ``1.2.3.4:80``, ``[::1]:80``, ``::1``), or None."""
    text = text.strip()
    if text.startswith("["):
        text = text[1:text.find("]")] if "]" in text else ""
    elif text.count(":") == 1:                 # IPv4 with a port
        text = text.split(":", 1)[0]
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def _split(text: str, sep: str) -> list[str]:
    """``text`` split at ``sep`` outside double-quoted strings (RFC 7230 quoted-string)."""
    parts, current, quoted, escaped = [], [], False, False
    for ch in text:
        if escaped:
            escaped = False
        elif ch == "\\" and quoted:
            escaped = True
        elif ch == '"':
            quoted = not quoted
        elif ch == sep and not quoted:
            parts.append("".join(current))
            current = []
            continue
        current.append(ch)
    parts.append("".join(current))
    return parts


def forwarded_for(values: Iterable[str]) -> list[str]:
    """The ``for=`` value of each element of ``Forwarded`` header values (RFC 7239), in order;
    an element without one gives ``""``."""
    hops = []
    for value in values:
        for element in _split(value, ","):
            if not element.strip():
                continue
            found = ""
            for pair in _split(element, ";"):
                name, _, raw = pair.partition("=")
                if name.strip().lower() == "for":
                    raw = raw.strip()
                    if len(raw) >= 2 and raw[0] == raw[-1] == '"':
                        raw = raw[1:-1].replace('\\"', '"').replace("\\\\", "\\")
                    found = raw
            hops.append(found)
    return hops


def x_forwarded_for(values: Iterable[str]) -> list[str]:
    """The hops of ``X-Forwarded-For`` header values, in order."""
    return [hop.strip() for value in values for hop in value.split(",") if hop.strip()]


class TrustedProxies:
    """The proxies whose forwarding headers are believed (``--trusted-proxies``).

    Parameters
    ----------
    networks : sequence of str
        Addresses or CIDR blocks (``10.0.0.5``, ``10.0.0.0/8``, ``::1``); empty: no proxy is
        trusted and the client is always the TCP peer.

    Raises
    ------
    ValueError
        An entry that is no address or block (the message names it).
    """

    def __init__(self, networks: Sequence[str] = ()):
        parsed: list[_NET] = []
        for entry in networks:
            try:
                parsed.append(ipaddress.ip_network(entry.strip(), strict=True))
            except ValueError as exc:
                raise ValueError(f"--trusted-proxies: {entry.strip()!r} is not an address or CIDR block "
                                 f"({exc})") from None
        self.networks = tuple(parsed)

    def trusts(self, ip: Optional[_IP]) -> bool:
        """True when ``ip`` lies in a trusted network."""
        return ip is not None and any(ip.version == n.version and ip in n for n in self.networks)

    def _walk(self, peer: str, hops: list[str]) -> str:
        """The right-most hop of ``hops`` (then ``peer``) that is not a trusted proxy; a hop that
        is no address stops the walk at the trusted hop to its right."""
        client = peer
        for hop in reversed(hops):
            ip = _address(hop)
            if ip is None:
                return client
            client = str(ip)
            if not self.trusts(ip):
                return client
        return client

    def client(self, peer: str, headers: Sequence[tuple[bytes, bytes]]) -> str:
        """The client address of a request from ``peer`` with raw ASGI ``headers``.

        Raises
        ------
        ForwardedConflict
            The peer is trusted and sent both headers, and they name different clients: one of
            them was written by someone other than the proxy.
        """
        peer_ip = _address(peer)
        if not self.trusts(peer_ip):
            return str(peer_ip) if peer_ip is not None else peer
        xff = [v.decode("latin-1") for k, v in headers if k.lower() == b"x-forwarded-for"]
        fwd = [v.decode("latin-1") for k, v in headers if k.lower() == b"forwarded"]
        peer = str(peer_ip)
        from_xff = self._walk(peer, x_forwarded_for(xff)) if xff else None
        from_fwd = self._walk(peer, forwarded_for(fwd)) if fwd else None
        if from_xff is not None and from_fwd is not None and from_xff != from_fwd:
            raise ForwardedConflict("X-Forwarded-For and Forwarded name different clients; a trusted proxy "
                                    "must set one of them and drop the other")
        return from_xff or from_fwd or peer


def _printable(raw: bytes) -> str:
    """A request path for the log: percent-encoded as sent, any other byte escaped."""
    return "".join(chr(b) if 0x21 <= b <= 0x7E else f"\\x{b:02x}" for b in raw)


class Edge:
    """ASGI middleware: the client address, security headers and access log (module docstring).

    Parameters
    ----------
    app : ASGI application
    trusted_proxies : TrustedProxies
    """

    def __init__(self, app, trusted_proxies: TrustedProxies):
        self.app, self.proxies = app, trusted_proxies

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        peer, port = scope.get("client") or ("unknown", 0)
        try:
            client = self.proxies.client(peer, scope.get("headers", []))
        except ForwardedConflict as exc:
            client = peer
            scope[FORWARDED_PROBLEM_KEY] = str(exc)
        scope["client"] = (client, port if client == peer else 0)

        async def send_secured(message):
            if message["type"] == "http.response.start":
                message["headers"] = secured(message.get("headers", []))
                path = _printable(scope.get("raw_path") or scope["path"].encode("utf-8"))
                access_log.info('%s - "%s %s HTTP/%s" %d', client, scope["method"], path,
                                scope.get("http_version", "1.1"), message["status"])
            await send(message)

        await self.app(scope, receive, send_secured)


def secured(headers: Sequence[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """Raw response ``headers`` with :data:`SECURITY_HEADERS` set (replacing any given) and a
    ``Content-Security-Policy`` that forbids framing."""
    names = {name.encode("latin-1") for name, _ in SECURITY_HEADERS}
    out = [(k, v) for k, v in headers if k.lower() not in names and k.lower() != b"content-security-policy"]
    out += [(k.encode("latin-1"), v.encode("latin-1")) for k, v in SECURITY_HEADERS]
    policies = [v.decode("latin-1") for k, v in headers if k.lower() == b"content-security-policy"]
    if not policies:
        policies = [API_CSP]
    for policy in policies:
        if "frame-ancestors" not in policy:
            policy = policy.rstrip().rstrip(";") + "; frame-ancestors 'none'"
        out.append((b"content-security-policy", policy.encode("latin-1")))
    return out


__all__ = ["API_CSP", "Edge", "FORWARDED_PROBLEM_KEY", "ForwardedConflict", "SECURITY_HEADERS", "TrustedProxies",
           "access_log", "forwarded_for", "secured", "x_forwarded_for"]
