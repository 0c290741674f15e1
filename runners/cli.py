"""The `vdgr` command: index, update, watch, query, gc, serve, mcp."""
from __future__ import annotations

import argparse
import os
import sys
from typing import Optional, Sequence

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vdgr", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    import importlib

    for name in ("index_cli", "update_cli", "query_cli", "gc_cli", "serve_cli", "mcp_cli"):
        try:
            module = importlib.import_module(f"runners.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"runners.{name}":
                raise
            continue
        module.register(sub)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = make_parser()
    args, extra = parser.parse_known_args(argv)
    if getattr(args, "accepts_beam_args", False):
        return args.func(args, extra)
    if extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
