"""``vdgr serve``: the HTTP service (FastAPI on uvicorn) over one index.

- ``auth.py``: API keys (KEYS.yaml), optional JWT bearer tokens, per-key rate limits;
- ``snapshot.py``: the knowledge base of the current index build, swapped when a new manifest
  appears (each request uses one snapshot);
- ``metrics.py``: Prometheus metrics;
- ``chat.py``: the OpenAI-compatible chat completions (streamed and not);
- ``app.py``: the FastAPI application (``create_app``);
- ``static/index.html``: the search page served at ``GET /``.

Only ``runners`` imports this package; ``vdgr_core`` never imports the HTTP stack.
"""
