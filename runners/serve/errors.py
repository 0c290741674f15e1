"""One error envelope for every non-2xx answer of ``vdgr serve`` (docs/SERVICE.md, "Errors").

Two shapes, chosen by the request path:

- the service's own routes (``/v1/query``, ``/v1/domains``, ``/``, ``/healthz``, ``/metrics``
  and any path outside ``/v1/``): ``{"error": {"type", "message", "field"?}}``;
- the OpenAI-compatible routes (``/v1/chat/completions``, ``/v1/models`` and any other path
  under ``/v1/``, which is where an OpenAI client would look): OpenAI's own shape
  ``{"error": {"message", "type", "param", "code"}}``.

``type`` is the same in both shapes and follows the status (``invalid_request_error``,
``authentication_error``, ``not_found_error``, ``method_not_allowed_error``,
``request_timeout_error``, ``request_too_large_error``, ``rate_limit_error``, ``server_error``);
``field`` / ``param`` names the part of the request at fault (a body field such as ``k`` or
``messages``, or ``body`` itself) and the message names the field and the limit it broke.
A message never echoes what the client sent: a 404 or 405 names the route template (never
the path requested), a validation error the field and the rule (never the value).
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional

from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.applications import Starlette
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request

#: paths under /v1/ that answer in the service's own shape (and /v1/documents/...); every other
#: /v1/ path is OpenAI's
NATIVE_V1 = frozenset({"/v1/query", "/v1/domains"})

TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
         404: "not_found_error", 405: "method_not_allowed_error", 408: "request_timeout_error",
         413: "request_too_large_error", 415: "invalid_request_error", 422: "invalid_request_error",
         429: "rate_limit_error"}
CODES = {400: "invalid_request", 401: "invalid_api_key", 403: "forbidden", 404: "unknown_url",
         405: "method_not_allowed", 408: "request_timeout", 413: "request_too_large",
         415: "unsupported_media_type", 422: "invalid_request", 429: "rate_limit_exceeded",
         500: "server_error"}


def error_type(status: int) -> str:
    """The ``type`` of an error with HTTP ``status``."""
    return TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")


class ApiError(Exception):
    """An error answered in the envelope of the request's path.

    Parameters
    ----------
    status : int
        HTTP status.
    message : str
        What went wrong, naming the field and the limit; never the client's input.
    field : str, optional
        The request field at fault (``k``, ``messages``, ``body``); ``param`` in OpenAI's shape.
    headers : dict, optional
        Extra response headers (``Retry-After``, ``WWW-Authenticate``, ``Allow``).
    kind : str, optional
        The ``type``; by default the one of ``status``.
    code : str, optional
        OpenAI's ``code``; by default the one of ``status``.
    """

    def __init__(self, status: int, message: str, *, field: Optional[str] = None,
                 headers: Optional[Mapping[str, str]] = None, kind: Optional[str] = None,
                 code: Optional[str] = None):
        super().__init__(message)
        self.status, self.message, self.field = status, message, field
        self.headers = dict(headers or {})
        self.kind = kind or error_type(status)
        self.code = code or CODES.get(status, "error")


def openai_shaped(path: str) -> bool:
    """True when errors of ``path`` take OpenAI's shape (see the module docstring)."""
    return path.startswith("/v1/") and path.rstrip("/") not in NATIVE_V1 and not path.startswith("/v1/documents/")


def error_body(path: str, err: ApiError) -> dict:
    """The JSON body of ``err`` answered to a request for ``path``."""
    if openai_shaped(path):
        return {"error": {"message": err.message, "type": err.kind, "param": err.field, "code": err.code}}
    body: dict[str, Any] = {"type": err.kind, "message": err.message}
    if err.field is not None:
        body["field"] = err.field
    return {"error": body}


def error_response(path: str, err: ApiError, *, close: bool = False) -> JSONResponse:
    """``err`` as a response; ``close`` adds ``Connection: close`` (a body left unread)."""
    headers = dict(err.headers)
    if close:
        headers["Connection"] = "close"
    return JSONResponse(error_body(path, err), status_code=err.status, headers=headers)


def _loc(parts: Iterable[Any]) -> str:
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += ("." if out else "") + str(p)
    return out


def describe(errors: Iterable[Mapping[str, Any]], *,
             rename: Optional[Mapping[str, str]] = None) -> tuple[str, Optional[str]]:
    """One message for pydantic / FastAPI validation errors, and the first field at fault.

    Parameters
    ----------
    errors : iterable of dict
        ``ValidationError.errors()`` or ``RequestValidationError.errors()``.
    rename : mapping, optional
        Field names to report under another name (``question`` -> ``messages`` for chat).

    Returns
    -------
    (str, str or None)
        ``"k: Input should be less than or equal to 50; colour: unknown field"`` and ``"k"``.
    """
    problems: list[str] = []
    first: Optional[str] = None
    for e in errors:
        parts = list(e.get("loc", ()))
        if parts and parts[0] == "body":
            parts = parts[1:]
        kind = e.get("type", "")
        ctx = e.get("ctx") or {}
        if kind == "json_invalid":
            at = parts[0] if parts and isinstance(parts[0], int) else None
            loc = "body"
            msg = "not valid JSON" + (f" at character {at}" if at is not None else "")
            if ctx.get("error"):
                msg += f" ({ctx['error']})"
        else:
            loc = _loc(parts) or "body"
            if rename and loc in rename:
                loc = rename[loc]
            msg = str(e.get("msg", "invalid"))
            if kind == "extra_forbidden":
                msg = ("not accepted: the caller's groups come from its credential" if loc == "groups"
                       else "unknown field (not accepted here)")
            elif kind == "missing":
                msg = "required"
            elif loc == "body" and kind in ("model_attributes_type", "dict_type", "model_type"):
                msg = "a JSON object is expected (send it with 'Content-Type: application/json')"
            elif msg.startswith("Value error, "):
                msg = msg[len("Value error, "):]
        problems.append(f"{loc}: {msg}")
        first = first or loc
    return "; ".join(problems) or "invalid", first


def _parse_failure(exc: BaseException) -> str:
    cause = exc.__cause__ or exc.__context__
    if isinstance(cause, UnicodeDecodeError):
        return f"body: not valid UTF-8 (byte {cause.start})"
    if isinstance(cause, RecursionError):
        return "body: JSON nested too deeply"
    return "body: cannot be parsed as JSON"


def install_handlers(app: Starlette) -> None:
    """Answer every error of ``app`` (FastAPI or plain Starlette) in the envelope:
    :class:`ApiError`, invalid bodies (400), Starlette's HTTP errors (404, 405, parse failures)
    and unexpected exceptions (500)."""

    async def _api_error(request: Request, exc: ApiError):
        return error_response(request.url.path, exc)

    async def _invalid(request: Request, exc: RequestValidationError):
        message, field = describe(exc.errors())
        return error_response(request.url.path, ApiError(400, "invalid request body: " + message, field=field))

    async def _http(request: Request, exc: StarletteHTTPException):
        path, status = request.url.path, exc.status_code
        headers = dict(exc.headers or {})
        field = None
        if status == 404:
            message = "no such endpoint (the endpoints are listed in docs/SERVICE.md)"
            if path in ("/openapi.json", "/docs"):
                message += "; the OpenAPI description (/openapi.json, /docs) is served only with vdgr serve --openapi"
        elif status == 405:
            allowed = headers.get("allow") or headers.get("Allow") or ""
            route = getattr(request.scope.get("route"), "path", None)
            message = (f"method not allowed on {route}" if route else "method not allowed") + \
                f"; allowed: {allowed or 'none'}"
        elif status == 400:
            message, field = "invalid request body: " + _parse_failure(exc), "body"
        else:
            message = str(exc.detail)
        return error_response(path, ApiError(status, message, field=field, headers=headers))

    async def _unexpected(request: Request, exc: Exception):
        # Starlette's ServerErrorMiddleware re-raises after this, so uvicorn logs the traceback
        return error_response(request.url.path, ApiError(
            500, "internal error: the server log has the details", code="server_error"))

    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(RequestValidationError, _invalid)
    app.add_exception_handler(StarletteHTTPException, _http)
    app.add_exception_handler(Exception, _unexpected)
