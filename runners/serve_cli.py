"""``vdgr serve``: the HTTP service over one index (FastAPI on uvicorn; docs/SERVICE.md)."""
from __future__ import annotations

import argparse
import sys

from runners.auth_options import add_jwt_options, jwt_settings
from runners.http_options import add_guard_options, guard_limits, refuse_unsafe_start
from schemas.errors import VdgrError


def register(subparsers) -> argparse.ArgumentParser:
    """Add the ``serve`` subcommand to an argparse ``subparsers`` object."""
    from runners.query_cli import add_model_options

    p = subparsers.add_parser("serve", help="serve an index over HTTP (query API, OpenAI chat, search page)",
                              description="Serve a VDGR index over HTTP: POST /v1/query, POST "
                                          "/v1/chat/completions (OpenAI-compatible), GET /, /healthz, /metrics.")
    p.add_argument("--index", required=True, help="index folder or URI")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("--api-keys", required=True, help="KEYS.yaml: keys: [{key, name, groups, rate_limit?}]")
    p.add_argument("--rate-limit", default="120/minute", help="default per-key limit (e.g. 120/minute)")
    add_jwt_options(p)
    add_guard_options(p)
    p.add_argument("--corpus", default=None,
                   help="the corpus root the index was built from: GET /v1/documents/{id} serves its files")
    p.add_argument("--openapi", action="store_true", help="serve /openapi.json and /docs (off by default)")
    p.add_argument("--reload-interval", type=float, default=2.0,
                   help="seconds between checks for a new index build (0: never)")
    p.add_argument("--workers-log-level", dest="log_level", default="info",
                   choices=("critical", "error", "warning", "info", "debug"))
    add_model_options(p)
    p.set_defaults(func=run)
    return p


def build_app(args):
    """The application ``args`` describe (also used by tests and the benchmark)."""
    from runners.query_cli import query_config
    from runners.serve.app import create_app
    from runners.serve.auth import Authenticator, RateLimiter, load_keys
    from runners.serve.snapshot import SnapshotHolder, open_snapshot
    from vdgr_core.store.manifest import read_manifest

    limits = guard_limits(args, openapi=args.openapi)
    keys = load_keys(args.api_keys)
    jwt = jwt_settings(args)
    config = query_config(args, read_manifest(args.index))
    holder = SnapshotHolder(args.index, lambda index, emb: open_snapshot(index, config, emb),
                            poll_s=args.reload_interval)
    return create_app(holder, Authenticator(keys, jwt), RateLimiter(args.rate_limit), limits=limits,
                      corpus=args.corpus)


def run(args) -> int:
    """Run the ``serve`` subcommand until interrupted; 2 on a configuration error or an unsafe
    start-up (:func:`runners.http_options.refuse_unsafe_start`)."""
    from runners.serve.startup import serve_forever

    try:
        if refuse_unsafe_start("serve", args):
            return 2
        app = build_app(args)
    except (VdgrError, ValueError, OSError) as exc:
        print(f"vdgr serve: error: {exc}", file=sys.stderr)
        return 2
    return serve_forever(app, args.host, args.port, args.log_level)
