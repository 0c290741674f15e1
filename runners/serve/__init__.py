"""``vdgr serve``: the HTTP service (FastAPI on uvicorn) over one index.

- ``auth.py``: API keys (KEYS.yaml), optional JWT bearer tokens, per-key rate limits, the
  per-address limit on failed authentications;
- ``guard.py``: the ASGI middleware in front of the routes: credentials checked from the headers
  before the body is read, the body bounded in size and time (``ServeLimits``);
- ``errors.py``: the one error envelope (the service's shape and OpenAI's) and its handlers;
- ``snapshot.py``: the knowledge base of the current index build, swapped when a new manifest
  appears (each request uses one snapshot);
- ``metrics.py``: Prometheus metrics;
- ``chat.py``: the OpenAI-compatible chat completions (streamed and not);
- ``app.py``: the FastAPI application (``create_app``);
- ``static/index.html``: the search page served at ``GET /``.

Only ``runners`` imports this package; ``vdgr_core`` never imports the HTTP stack.
"""
