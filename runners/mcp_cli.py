"""``vdgr mcp``: the index served to agents over the Model Context Protocol (docs/SERVICE.md).

Tools ``search`` and ``fetch`` (:mod:`runners.mcp.tools`) over the same knowledge base, query
stages and access control as ``vdgr serve``'s ``POST /v1/query``. Two transports:

* ``--transport stdio`` (the default): for a local agent that starts the command itself; the
  caller's groups are ``--groups`` (as ``vdgr query --groups``). Nothing but the protocol is
  written to stdout.
* ``--transport http``: streamable HTTP at ``http://HOST:PORT/mcp``, every request
  authenticated with the API keys (``--api-keys``) or JWTs of ``vdgr serve``; the groups come
  from the credential (:mod:`runners.mcp.http`). The same guard as ``vdgr serve``'s, with the
  same flags (:mod:`runners.http_options`), and the same refusal of an unsafe start-up.

Needs the ``mcp`` and ``serve`` extras (``pip install 'vdgr[serve,mcp]'``: the credentials and
snapshots are the service's).
"""
from __future__ import annotations

import argparse
import sys

from runners.auth_options import add_jwt_options, jwt_settings
from runners.http_options import add_guard_options, guard_limits, refuse_unsafe_start
from schemas.errors import VdgrError


def register(subparsers) -> argparse.ArgumentParser:
    """Add the ``mcp`` subcommand to an argparse ``subparsers`` object."""
    from runners.query_cli import add_model_options

    p = subparsers.add_parser("mcp", help="serve an index to agents over the Model Context Protocol",
                              description="Serve a VDGR index to agents over MCP (tools search and fetch), "
                                          "on stdio or streamable HTTP.")
    p.add_argument("--index", required=True, help="index folder or URI")
    p.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    p.add_argument("--groups", default="", help="stdio: comma-separated access groups of the local user")
    p.add_argument("--host", default="127.0.0.1", help="http: address to listen on")
    p.add_argument("--port", type=int, default=8090, help="http: port (default 8090)")
    p.add_argument("--api-keys", help="http (required): KEYS.yaml of vdgr serve: keys: [{key, name, groups}]")
    p.add_argument("--rate-limit", default="120/minute", help="http: default per-key limit")
    add_guard_options(p, prefix="http: ")
    add_jwt_options(p, prefix="http: ")
    p.add_argument("--workers-log-level", dest="log_level", default="warning",
                   choices=("critical", "error", "warning", "info", "debug"),
                   help="http: the server's log level (default warning; info adds the access log)")
    p.add_argument("--reload-interval", type=float, default=2.0,
                   help="seconds between checks for a new index build (0: never)")
    add_model_options(p)
    p.set_defaults(func=run)
    return p


def _holder(args):
    from runners.query_cli import query_config
    from runners.serve.snapshot import SnapshotHolder, open_snapshot
    from vdgr_core.store.manifest import read_manifest

    config = query_config(args, read_manifest(args.index))
    return SnapshotHolder(args.index, lambda index, emb: open_snapshot(index, config, emb),
                          poll_s=args.reload_interval)


def _authenticator(args):
    from runners.serve.auth import Authenticator, load_keys

    if not args.api_keys:
        raise VdgrError("--transport http needs --api-keys (the keys file of vdgr serve)")
    jwt = jwt_settings(args)
    return Authenticator(load_keys(args.api_keys), jwt)


def build(args):
    """(the MCP server or the HTTP application, the snapshot holder) that ``args`` describe."""
    try:
        from runners.mcp.tools import build_server
    except ModuleNotFoundError as e:
        if e.name and e.name.split(".")[0] == "mcp":
            raise VdgrError("vdgr mcp needs the mcp extra: pip install 'vdgr[serve,mcp]'") from None
        raise
    from runners.serve.auth import Caller
    from vdgr_core.store.filters import validate_group

    if args.transport == "stdio":
        groups = tuple(validate_group(g.strip()) for g in args.groups.split(",") if g.strip())
        caller = Caller("stdio", groups)
        holder = _holder(args)
        return build_server(holder, lambda ctx: caller), holder
    from runners.mcp.http import caller_of_request, http_app
    from runners.serve.auth import RateLimiter

    limits = guard_limits(args)
    auth = _authenticator(args)
    holder = _holder(args)
    server = build_server(holder, caller_of_request)
    return http_app(server, auth, RateLimiter(args.rate_limit), limits=limits), holder


def run(args) -> int:
    """Run the ``mcp`` subcommand until the client closes stdio or the server is stopped; 2 on a
    configuration error or an unsafe start-up (HTTP)."""
    try:
        if args.transport == "http" and refuse_unsafe_start("mcp", args):
            return 2
        served, holder = build(args)
    except (VdgrError, ValueError, OSError) as exc:
        print(f"vdgr mcp: error: {exc}", file=sys.stderr)
        return 2
    holder.start()
    code = 0
    try:
        if args.transport == "stdio":
            served.run("stdio")
        else:
            from runners.serve.startup import serve_forever

            code = serve_forever(served, args.host, args.port, args.log_level)
    except KeyboardInterrupt:
        pass
    finally:
        holder.stop()
    return code
