"""`vdgr gc`: remove table versions and shards no current manifest needs."""
from __future__ import annotations

import datetime as _dt
import sys

from runners.index_cli import add_lock_timeout_argument


def register(subparsers) -> None:
    p = subparsers.add_parser("gc", help="remove old table versions, unused BM25 shards and crash leftovers")
    p.add_argument("--index", required=True)
    p.add_argument("--keep-minutes", type=float, default=60.0,
                   help="grace period for readers pinned to an older manifest (default 60)")
    add_lock_timeout_argument(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from schemas.errors import VdgrError
    from vdgr_core.progress import plural
    from vdgr_core.store.gc import collect_garbage

    try:
        r = collect_garbage(args.index, _dt.timedelta(minutes=args.keep_minutes), args.lock_timeout)
    except VdgrError as exc:
        print(f"vdgr gc: error: {exc}", file=sys.stderr)
        return 2
    print(f"removed {plural(r.lance_versions_removed, 'table version')}, "
          f"{plural(r.shard_folders_removed, 'BM25 shard or layout folder')}, "
          f"{plural(r.vector_blocks_removed, 'vector block')}, {plural(r.staging_runs_removed, 'staging run')}")
    return 0
