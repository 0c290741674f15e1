"""Starting an HTTP surface (``vdgr serve``, ``vdgr mcp --transport http``).

- :func:`uvicorn_config` is the one uvicorn configuration of both commands (and the tests):
  uvicorn's own proxy-header handling and access log are off, because
  :class:`runners.serve.edge.Edge` resolves the client address (``--trusted-proxies``) and
  writes the access log (logger ``vdgr.access``, without query strings).
"""
from __future__ import annotations

import copy

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


__all__ = ["serve_forever", "uvicorn_config"]
