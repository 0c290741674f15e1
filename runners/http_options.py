"""Command-line options of the HTTP guard, shared by ``vdgr serve`` and ``vdgr mcp --transport
http`` (one guard for every HTTP surface: docs/SERVICE.md, "Hostile clients")."""
from __future__ import annotations

import argparse


def _csv(value: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in value.split(",") if v.strip())


def add_guard_options(p: argparse.ArgumentParser, *, prefix: str = "") -> None:
    """Add the guard's flags (``prefix``: words put before each help, e.g. ``"http: "``)."""
    p.add_argument("--max-body-bytes", type=int, default=1 << 20,
                   help=f"{prefix}largest request body in bytes, declared or streamed (default 1048576); "
                        "larger: 413")
    p.add_argument("--body-timeout", type=float, default=10.0,
                   help=f"{prefix}seconds a request body may take to arrive whole (default 10); slower: 408")
    p.add_argument("--auth-failures-per-minute", type=int, default=30,
                   help=f"{prefix}failed authentications allowed per client address, refilled over a minute "
                        "(default 30; 0: no limit); beyond it: 429 with Retry-After")
    p.add_argument("--trusted-proxies", type=_csv, default=(), metavar="CIDR,...",
                   help=f"{prefix}reverse proxies (addresses or CIDR blocks) whose X-Forwarded-For and "
                        "Forwarded headers name the client (default: none; the client is the TCP peer)")
    p.add_argument("--allowed-hosts", type=_csv, default=None, metavar="HOST,...",
                   help=f"{prefix}Host header names answered (default: --host and localhost; "
                        "'*.example.com' a domain, '*' any); any other: 400")


def guard_limits(args: argparse.Namespace, **extra) -> "ServeLimits":  # noqa: F821
    """The :class:`runners.serve.guard.ServeLimits` the flags describe (``extra``: more fields)."""
    from runners.serve.guard import ServeLimits, default_allowed_hosts

    return ServeLimits(max_body_bytes=args.max_body_bytes, body_timeout_s=args.body_timeout,
                       auth_failures_per_minute=args.auth_failures_per_minute,
                       trusted_proxies=tuple(args.trusted_proxies),
                       allowed_hosts=tuple(args.allowed_hosts or default_allowed_hosts(args.host)), **extra)


__all__ = ["add_guard_options", "guard_limits"]
