"""``vdgr serve``: the HTTP service (FastAPI on uvicorn) over one index.

- ``auth.py``: API keys (KEYS.yaml), optional JWT bearer tokens, per-key rate limits, the
  per-address limit on failed authentications;
- ``edge.py``: the ASGI middleware around the whole application: the client address (the peer,
  or the right-most untrusted hop behind ``--trusted-proxies``), security headers, access log
  without query strings;
- ``guard.py``: the ASGI middleware in front of the routes: allowed hosts, credentials checked
  from the headers before the body is read, the body bounded in size and time
  (``ServeLimits``); ``vdgr mcp --transport http`` sits behind the same two;
- ``startup.py``: the refusal of unsafe start-ups and the one uvicorn configuration;
- ``errors.py``: the one error envelope (the service's shape and OpenAI's) and its handlers;
- ``snapshot.py``: the knowledge base of the current index build, swapped when a new manifest
  appears (each request uses one snapshot);
- ``metrics.py``: Prometheus metrics;
- ``chat.py``: the OpenAI-compatible chat completions (streamed and not);
- ``app.py``: the FastAPI application (``create_app``);
- ``static/``: the search page served at ``GET /`` (``index.html``, ``page.js``, ``page.css``).

Only ``runners`` imports this package; ``vdgr_core`` never imports the HTTP stack.
"""
