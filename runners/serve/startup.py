"""Starting an HTTP surface (``vdgr serve``, ``vdgr mcp --transport http``) safely.

- :func:`unsafe_start` names what makes a start-up unsafe: listening beyond loopback with a
  keys file (or an HS256 secret) that group or others may read, or with a key of the demo
  file ``examples/keys.yaml`` (:data:`DEMO_KEYS`). The commands refuse such a start with a
  one-line reason unless ``--insecure-demo`` is given, and then say so loudly.
- :func:`uvicorn_config` is the one uvicorn configuration of both commands (and the tests):
  uvicorn's own proxy-header handling and access log are off, because
  :class:`runners.serve.edge.Edge` resolves the client address (``--trusted-proxies``) and
  writes the access log (logger ``vdgr.access``, without query strings).
"""
from __future__ import annotations

import copy
import ipaddress
import os
import stat
from typing import Optional, Sequence

from runners.serve.auth import KeysFile

#: the keys of ``examples/keys.yaml`` (a test keeps the two equal): public, so never served
#: beyond loopback
DEMO_KEYS = frozenset({"demo-staff-key-change-me", "demo-netops-key-change-me"})


def is_loopback(host: str) -> bool:
    """True when listening on ``host`` serves this machine only (``127.0.0.0/8``, ``::1``,
    ``localhost``); any other name or address (``0.0.0.0`` included) reaches beyond it."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _readable_by_others(path: str) -> Optional[str]:
    """``"mode 0644"`` when group or others may read ``path``, else None."""
    mode = stat.S_IMODE(os.stat(path).st_mode)
    return f"mode {mode:04o}" if mode & (stat.S_IRGRP | stat.S_IROTH) else None


def unsafe_start(host: str, keys_path: str, keys: KeysFile, secret_paths: Sequence[str] = ()) -> list[str]:
    """Why listening on ``host`` with these credentials is unsafe (empty: it is not).

    Parameters
    ----------
    host : str
        The address the server listens on; on loopback nothing is unsafe.
    keys_path : str
        The keys file (``--api-keys``).
    keys : KeysFile
        Its content.
    secret_paths : sequence of str
        Other files holding secrets (the HS256 ``--jwt-key-file``).
    """
    if is_loopback(host):
        return []
    reasons = []
    for flag, path in (("--api-keys", keys_path), *(("--jwt-key-file", p) for p in secret_paths)):
        mode = _readable_by_others(path)
        if mode:
            reasons.append(f"{flag} {path} is readable by group or others ({mode}; chmod 600 it)")
    demo = sorted(k.name for k in keys.keys if k.key in DEMO_KEYS)
    if demo:
        reasons.append(f"{keys_path} holds the public demo keys of examples/keys.yaml ({', '.join(demo)})")
    return reasons


def refuse_or_warn(command: str, host: str, reasons: list[str], insecure_demo: bool, err) -> bool:
    """Print the verdict on an unsafe start-up to ``err``; True when the command must stop.

    Without ``insecure_demo`` one line: ``vdgr serve: error: refusing to listen on 0.0.0.0
    (beyond loopback): ...``; with it, a warning banner and the start goes on.
    """
    if not reasons:
        return False
    what = f"listen on {host} (beyond loopback)"
    if not insecure_demo:
        print(f"vdgr {command}: error: refusing to {what}: {'; '.join(reasons)}; "
              f"use --host 127.0.0.1, or --insecure-demo to start anyway", file=err)
        return True
    rule = "!" * 78
    print(f"{rule}\nvdgr {command}: WARNING: --insecure-demo: starting anyway to {what}, although\n"
          + "".join(f"  - {r}\n" for r in reasons)
          + f"Anyone who can reach this address may use these credentials. Never do this with real data.\n{rule}",
          file=err, flush=True)
    return False


def uvicorn_config(app, host: str, port: int, log_level: str = "info", **kw):
    """The ``uvicorn.Config`` serving ``app``: no proxy headers (the client address is
    :class:`runners.serve.edge.Edge`'s business), uvicorn's access log off and logger
    ``vdgr.access`` on uvicorn's access handler at ``log_level``."""
    import uvicorn
    from uvicorn.config import LOGGING_CONFIG

    log_config = copy.deepcopy(LOGGING_CONFIG)
    log_config["loggers"]["vdgr.access"] = {"handlers": ["access"], "level": log_level.upper(), "propagate": False}
    return uvicorn.Config(app, host=host, port=port, log_level=log_level, proxy_headers=False,
                          access_log=False, log_config=log_config, **kw)


def serve_forever(app, host: str, port: int, log_level: str = "info") -> int:
    """Serve ``app`` with :func:`uvicorn_config` until interrupted; 0, or 1 when the server did
    not start (the port taken, ...; uvicorn logged why)."""
    import uvicorn

    server = uvicorn.Server(uvicorn_config(app, host, port, log_level))
    try:
        server.run()
    except KeyboardInterrupt:
        pass
    return 0 if server.started else 1


__all__ = ["DEMO_KEYS", "is_loopback", "refuse_or_warn", "serve_forever", "unsafe_start", "uvicorn_config"]
