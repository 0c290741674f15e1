"""Command-line options for JWT bearer tokens, shared by ``vdgr serve`` and ``vdgr mcp``."""
from __future__ import annotations

import argparse
from typing import Optional

from schemas.errors import VdgrError


def add_jwt_options(p: argparse.ArgumentParser, *, prefix: str = "") -> None:
    """Add ``--jwt-algorithm``, ``--jwt-key-file``, ``--jwt-audience`` and ``--jwt-issuer``
    (``prefix``: words put before the algorithm's help, e.g. ``"http: "``)."""
    p.add_argument("--jwt-algorithm", choices=("HS256", "RS256"), default=None,
                   help=f"{prefix}also accept JWT bearer tokens signed with this algorithm")
    p.add_argument("--jwt-key-file", default=None, help="HS256 secret or RS256 PEM public key (file)")
    p.add_argument("--jwt-audience", default=None)
    p.add_argument("--jwt-issuer", default=None)


def jwt_settings(args: argparse.Namespace) -> Optional["JWTSettings"]:  # noqa: F821
    """The JWT settings the options name, or None when no algorithm is given.

    Raises
    ------
    VdgrError
        When an algorithm is given without a key file.
    """
    if not args.jwt_algorithm:
        return None
    if not args.jwt_key_file:
        raise VdgrError("--jwt-algorithm needs --jwt-key-file")
    from runners.serve.auth import JWTSettings

    with open(args.jwt_key_file, encoding="utf-8") as f:
        return JWTSettings(algorithm=args.jwt_algorithm, key=f.read().strip(), audience=args.jwt_audience,
                           issuer=args.jwt_issuer)


__all__ = ["add_jwt_options", "jwt_settings"]
