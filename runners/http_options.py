"""Command-line options of the HTTP guard, shared by ``vdgr serve`` and ``vdgr mcp --transport
http`` (one guard for every HTTP surface: docs/SERVICE.md, "Hostile clients"), and the check
that refuses an unsafe start-up."""
from __future__ import annotations

import argparse
import sys

from schemas.errors import VdgrError


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
    p.add_argument("--insecure-demo", action="store_true",
                   help=f"{prefix}start beyond loopback even with a keys file others may read or the demo "
                        "keys of examples/keys.yaml (refused otherwise)")


def guard_limits(args: argparse.Namespace, **extra) -> "ServeLimits":  # noqa: F821
    """The :class:`runners.serve.guard.ServeLimits` the flags describe (``extra``: more fields)."""
    from runners.serve.guard import ServeLimits, default_allowed_hosts

    return ServeLimits(max_body_bytes=args.max_body_bytes, body_timeout_s=args.body_timeout,
                       auth_failures_per_minute=args.auth_failures_per_minute,
                       trusted_proxies=tuple(args.trusted_proxies),
                       allowed_hosts=tuple(args.allowed_hosts or default_allowed_hosts(args.host)), **extra)


def refuse_unsafe_start(command: str, args: argparse.Namespace, err=None) -> bool:
    """True (and one line on ``err``) when ``args`` would serve beyond loopback with credentials
    others may read or the demo keys, without ``--insecure-demo``; with it, a loud warning.
    Beyond loopback without ``--allowed-hosts``, a note that only the bound host and localhost
    are answered.

    Raises
    ------
    schemas.errors.ConfigError
        The keys file is unreadable or invalid.
    """
    from runners.serve.auth import load_keys
    from runners.serve.startup import refuse_or_warn, unsafe_start

    from runners.serve.startup import is_loopback

    err = err if err is not None else sys.stderr
    if not args.api_keys:
        raise VdgrError(f"vdgr {command} over HTTP needs --api-keys (the keys file of vdgr serve)")
    secrets = [args.jwt_key_file] if args.jwt_algorithm == "HS256" and args.jwt_key_file else []
    reasons = unsafe_start(args.host, args.api_keys, load_keys(args.api_keys), secrets)
    if refuse_or_warn(command, args.host, reasons, args.insecure_demo, err):
        return True
    if not is_loopback(args.host) and args.allowed_hosts is None:
        print(f"vdgr {command}: note: only requests for Host {args.host} or localhost are answered; "
              f"name this server's other names and addresses with --allowed-hosts", file=err)
    return False


__all__ = ["add_guard_options", "guard_limits", "refuse_unsafe_start"]
