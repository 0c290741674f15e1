"""The one LLM client: OpenAI-compatible chat, structured output, cache, retries, usage.

Every LLM use in VDGR goes through :class:`LLMClient`. It talks to any OpenAI-compatible
endpoint through the ``openai`` package with the package's own retries switched off; retries,
backoff, the persistent cache and the per-stage usage counts are done here so that they are the
same whatever the endpoint.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import sqlite3
import threading
import time
from typing import Any, Callable, Iterator, Optional, Sequence, TypeVar

import openai
from pydantic import BaseModel, ValidationError

from schemas.config import LLMConfig
from schemas.errors import LLMError

M = TypeVar("M", bound=BaseModel)
Messages = list[dict[str, Any]]


@dataclasses.dataclass
class StageUsage:
    """What one stage (``"annotate_chunk"``, ``"reflect"``, ...) spent.

    Attributes
    ----------
    calls : int
        HTTP requests actually sent (retries included, cache hits excluded).
    prompt_tokens, completion_tokens : int
        Token counts reported by the endpoint.
    cache_hits : int
        Requests answered from the persistent cache (no HTTP call).
    failures : int
        Requests that ended in :class:`~schemas.errors.LLMError`.
    retries : int
        Extra attempts after a transient HTTP error or an out-of-contract reply.
    """

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hits: int = 0
    failures: int = 0
    retries: int = 0


class _Transient(Exception):
    """An attempt failed in a way worth retrying (5xx, 429, connection, timeout)."""


class _OutOfContract(Exception):
    """The endpoint answered, but not with what was asked (bad JSON, schema mismatch)."""


def is_transient(exc: BaseException) -> bool:
    """Return True for errors worth retrying: connection/timeout, HTTP 429 and 5xx."""
    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code == 429 or exc.status_code >= 500
    return False


def strict_json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """JSON schema of ``model`` in the form OpenAI's strict structured output accepts.

    Every object gets ``additionalProperties: false`` and lists all its properties as required;
    ``default`` values are dropped.
    """

    def fix(node: Any) -> Any:
        if isinstance(node, dict):
            out = {k: fix(v) for k, v in node.items() if k != "default"}
            if out.get("type") == "object" and "properties" in out:
                out["additionalProperties"] = False
                out["required"] = list(out["properties"].keys())
            return out
        if isinstance(node, list):
            return [fix(v) for v in node]
        return node

    return fix(model.model_json_schema())


def grammar_json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """:func:`strict_json_schema` without string length bounds, for ``json_object`` requests.

    llama.cpp's server turns the schema into a grammar and expands ``maxLength: n`` into ``n``
    nested optional characters; it rejects the grammar above about 2,000 repetitions ("exceeds
    sane defaults"), and its server process can stop on that rejection. The reply is still
    validated against ``model`` (lengths included) and ``max_tokens`` bounds its length.
    """

    def drop(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: drop(v) for k, v in node.items() if k not in ("maxLength", "minLength")}
        if isinstance(node, list):
            return [drop(v) for v in node]
        return node

    return drop(strict_json_schema(model))


_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


def extract_json(content: Optional[str]) -> Any:
    """Parse the JSON value in an assistant message.

    Accepts bare JSON, JSON inside a ```` ```json ```` fence, or JSON after leading prose.

    Raises
    ------
    ValueError
        When no JSON object or array can be found.
    """
    if not content or not content.strip():
        raise ValueError("empty reply")
    text = content.strip()
    try:
        return json.loads(text)
    except ValueError:
        pass
    for block in _FENCE.findall(text):
        try:
            return json.loads(block.strip())
        except ValueError:
            continue
    decoder = json.JSONDecoder()
    for i, ch in enumerate(text):
        if ch in "{[":
            try:
                return decoder.raw_decode(text, i)[0]
            except ValueError:
                continue
    raise ValueError("no JSON value in reply")


class _SqliteCache:
    """A key -> text store in one sqlite file (WAL), safe to share between threads."""

    def __init__(self, path: str):
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(path, timeout=30.0, check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("CREATE TABLE IF NOT EXISTS llm_cache (key TEXT PRIMARY KEY, value TEXT NOT NULL)")

    def get(self, key: str) -> Optional[str]:
        with self._lock:
            row = self._conn.execute("SELECT value FROM llm_cache WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def put(self, key: str, value: str) -> None:
        with self._lock:
            self._conn.execute("INSERT OR REPLACE INTO llm_cache (key, value) VALUES (?, ?)", (key, value))

    def close(self) -> None:
        with self._lock:
            self._conn.close()


class LLMClient:
    """Chat and structured-output calls against an OpenAI-compatible endpoint.

    Parameters
    ----------
    config : LLMConfig
        Endpoint, model, retry, concurrency and cache settings.
    sleep : callable, optional
        Used for backoff between retries (``time.sleep``); injectable for tests.

    Notes
    -----
    Thread-safe: one client may be shared by many threads. At most ``config.max_concurrency``
    HTTP requests are in flight per client at any time.
    """

    def __init__(self, config: LLMConfig, *, sleep: Callable[[float], None] = time.sleep):
        self._config = config
        self._sleep = sleep
        self._api = openai.OpenAI(
            base_url=config.base_url, api_key=config.api_key, max_retries=0, timeout=config.timeout_s
        )
        self._cache = _SqliteCache(config.cache_path) if config.cache_path else None
        self._slots = threading.BoundedSemaphore(config.max_concurrency)
        self._usage_lock = threading.Lock()
        self._usage: dict[str, StageUsage] = {}

    @property
    def config(self) -> LLMConfig:
        return self._config

    # ----------------------------------------------------------------- usage
    def _count(self, stage: str, **deltas: int) -> None:
        with self._usage_lock:
            rec = self._usage.setdefault(stage, StageUsage())
            for name, delta in deltas.items():
                setattr(rec, name, getattr(rec, name) + delta)

    def usage(self) -> dict[str, StageUsage]:
        """Return a snapshot (copies) of the usage record of every stage seen so far."""
        with self._usage_lock:
            return {k: dataclasses.replace(v) for k, v in self._usage.items()}

    def total_calls(self) -> int:
        """Return the number of HTTP requests sent, all stages together."""
        with self._usage_lock:
            return sum(u.calls for u in self._usage.values())

    # ----------------------------------------------------------------- cache
    def _key(self, messages: Sequence[dict[str, Any]], schema: Optional[dict], extra: dict) -> str:
        payload = {
            "model": self._config.model,
            "messages": list(messages),
            "schema": schema,
            "temperature": extra.get("temperature", self._config.temperature),
            "extra": {k: v for k, v in sorted(extra.items()) if k != "temperature"},
        }
        blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def _cache_get(self, key: str) -> Optional[str]:
        return self._cache.get(key) if self._cache else None

    def _cache_put(self, key: str, value: str) -> None:
        if self._cache:
            self._cache.put(key, value)

    # ----------------------------------------------------------------- HTTP
    def _send(self, stage: str, messages: Messages, params: dict[str, Any]) -> str:
        """Send one request; return the assistant content.

        Raises ``_Transient`` (retry), ``_OutOfContract`` (retry) or ``LLMError`` (give up).
        """
        args: dict[str, Any] = {
            "model": self._config.model,
            "temperature": self._config.temperature,
            "max_tokens": self._config.max_tokens,
        }
        args.update(params)
        with self._slots:
            self._count(stage, calls=1)
            try:
                resp = self._api.chat.completions.create(messages=messages, **args)
            except openai.APIResponseValidationError as exc:
                raise _OutOfContract(f"unparseable response: {exc}") from exc
            except (openai.APIConnectionError, openai.APIStatusError) as exc:
                if is_transient(exc):
                    raise _Transient(str(exc)) from exc
                self._count(stage, failures=1)
                raise LLMError(f"[{stage}] request rejected: {exc}") from exc
        usage = getattr(resp, "usage", None)
        if usage is not None:
            self._count(
                stage,
                prompt_tokens=int(usage.prompt_tokens or 0),
                completion_tokens=int(usage.completion_tokens or 0),
            )
        try:
            content = resp.choices[0].message.content
        except (AttributeError, IndexError, TypeError) as exc:
            raise _OutOfContract("response has no choices") from exc
        if content is None:
            raise _OutOfContract("response has no content")
        return content

    def _run(
        self,
        stage: str,
        messages: Messages,
        params: dict[str, Any],
        accept: Callable[[str], Any],
    ) -> Any:
        """Retry loop shared by :meth:`chat` and :meth:`structured`."""
        convo = list(messages)
        last = "no attempt made"
        attempts = self._config.max_retries + 1
        for attempt in range(attempts):
            if attempt:
                self._count(stage, retries=1)
            try:
                content = self._send(stage, convo, params)
                return accept(content)
            except _Transient as exc:
                last = f"transient error: {exc}"
                if attempt + 1 < attempts:
                    self._sleep(self._config.backoff_s * (2 ** attempt))
            except _OutOfContract as exc:
                last = f"reply out of contract: {exc}"
                bad = exc.args[1] if len(exc.args) > 1 else None
                if bad is not None:
                    convo = list(messages) + [
                        {"role": "assistant", "content": bad},
                        {"role": "user", "content": (
                            f"That reply was not valid for the required JSON schema ({exc.args[0]}). "
                            "Reply again with only the JSON object."
                        )},
                    ]
        self._count(stage, failures=1)
        raise LLMError(f"[{stage}] gave up after {attempts} attempt(s): {last}")

    # ----------------------------------------------------------------- API
    def chat(self, stage: str, messages: Messages, **kw: Any) -> str:
        """Plain chat completion; returns the assistant's text.

        Parameters
        ----------
        stage : str
            Usage bucket for this call.
        messages : list of dict
            OpenAI chat messages.
        **kw
            Extra request parameters (``temperature``, ``max_tokens``, ...); part of the cache key.

        Raises
        ------
        LLMError
            On a non-retryable HTTP error or when all retries are spent.
        """
        key = self._key(messages, None, kw)
        hit = self._cache_get(key)
        if hit is not None:
            self._count(stage, cache_hits=1)
            return hit
        text = self._run(stage, messages, dict(kw), lambda content: content)
        self._cache_put(key, text)
        return text

    def chat_stream(self, stage: str, messages: Messages, *, usage_out: Optional[StageUsage] = None,
                    **kw: Any) -> Iterator[str]:
        """Streamed chat completion: yield the assistant's text deltas as they arrive.

        Not cached (a stream is consumed as it is produced). A transient failure before the
        first delta is retried like :meth:`chat`; once text has been yielded a failure ends the
        stream with :class:`LLMError` (what was yielded cannot be taken back). The request asks
        for a final usage chunk (``stream_options.include_usage``); endpoints that report one
        have their tokens counted.

        Parameters
        ----------
        stage : str
            Usage bucket for this call.
        messages : list of dict
            OpenAI chat messages.
        usage_out : StageUsage, optional
            Also receives this stream's calls and tokens (the client's own per-stage record is
            shared by every caller).
        **kw
            Extra request parameters (``temperature``, ``max_tokens``, ...).

        Raises
        ------
        LLMError
            On a non-retryable HTTP error, when all retries are spent, or when the stream breaks.
        """
        args: dict[str, Any] = {
            "model": self._config.model,
            "temperature": self._config.temperature,
            "max_tokens": self._config.max_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        args.update(kw)

        def count(**deltas: int) -> None:
            self._count(stage, **deltas)
            if usage_out is not None:
                for name, delta in deltas.items():
                    setattr(usage_out, name, getattr(usage_out, name) + delta)

        attempts = self._config.max_retries + 1
        last = "no attempt made"
        for attempt in range(attempts):
            if attempt:
                count(retries=1)
            produced = False
            try:
                with self._slots:
                    count(calls=1)
                    stream = self._api.chat.completions.create(messages=messages, **args)
                    try:
                        for chunk in stream:
                            usage = getattr(chunk, "usage", None)
                            if usage is not None:
                                count(prompt_tokens=int(usage.prompt_tokens or 0),
                                      completion_tokens=int(usage.completion_tokens or 0))
                            for choice in chunk.choices or ():
                                delta = getattr(choice.delta, "content", None) if choice.delta else None
                                if delta:
                                    produced = True
                                    yield delta
                    finally:
                        stream.close()
                return
            except openai.APIError as exc:
                if produced or not is_transient(exc):
                    count(failures=1)
                    raise LLMError(f"[{stage}] stream failed: {exc}") from exc
                last = f"transient error: {exc}"
                if attempt + 1 < attempts:
                    self._sleep(self._config.backoff_s * (2 ** attempt))
        count(failures=1)
        raise LLMError(f"[{stage}] gave up after {attempts} attempt(s): {last}")

    def structured(self, stage: str, messages: Messages, response_model: type[M]) -> M:
        """Ask for a JSON reply that validates against ``response_model``.

        The request carries ``response_format`` with the model's strict JSON schema; the reply
        is parsed tolerantly (code fences, leading prose) and validated. A malformed or invalid
        reply is retried (each retry is a new HTTP call) up to ``config.max_retries`` times.

        Raises
        ------
        LLMError
            On a non-retryable HTTP error or when all retries are spent.
        """
        schema = strict_json_schema(response_model)
        key = self._key(messages, schema, {})
        hit = self._cache_get(key)
        if hit is not None:
            try:
                obj = response_model.model_validate_json(hit)
            except ValidationError:
                obj = None  # the model changed since this entry was written: ask again
            if obj is not None:
                self._count(stage, cache_hits=1)
                return obj
        name = re.sub(r"[^a-zA-Z0-9_-]", "_", response_model.__name__)[:64]
        if self._config.structured_output == "json_object":
            params = {"response_format": {"type": "json_object", "schema": grammar_json_schema(response_model)}}
        else:
            params = {"response_format": {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": schema, "strict": True},
            }}

        def accept(content: str) -> M:
            try:
                return response_model.model_validate(extract_json(content))
            except (ValueError, ValidationError) as exc:
                detail = str(exc).splitlines()[0][:200]
                raise _OutOfContract(detail, content) from exc

        obj = self._run(stage, messages, params, accept)
        self._cache_put(key, obj.model_dump_json())
        return obj

    def close(self) -> None:
        """Close the HTTP client and the cache file."""
        self._api.close()
        if self._cache:
            self._cache.close()

    def __enter__(self) -> "LLMClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
